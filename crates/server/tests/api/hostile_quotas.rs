//! The hostile group, quotas: what one account may hold is bounded, each limit answered
//! with 403 `quota_exceeded` (JSON-RPC 100) and nothing changed; a run that grows past its
//! bound fails instead of growing the database; top-ups that would overflow are refused;
//! numbers cannot be held without the credit to buy them, nor again and again.

use reqwest::Method;
use serde_json::{Value, json};

use crate::both_backends;
use crate::helpers::{TestAccount, TestApp, assert_error, send};

both_backends!(
    every_quota_answers_quota_exceeded,
    a_run_that_grows_past_its_bound_fails,
    a_top_up_that_would_overflow_is_refused,
    numbers_cannot_be_held_again_and_again,
);

async fn with_small_quotas(app: &TestApp) -> TestApp {
    TestApp::spawn_with(app.backend, |c| {
        c.quota_webhooks = 2;
        c.quota_scenarios = 2;
        c.quota_audio_files = 2;
        c.quota_audio_bytes = 100_000;
        c.quota_running_runs = 2;
    })
    .await
    .expect("app")
}

fn rpc(app: &TestApp, acct: &TestAccount, method: &str, params: Value) -> reqwest::RequestBuilder {
    app.anon(Method::POST, "/json-rpc/v1.1/")
        .header("authorization", format!("Api-Key {}", acct.api_key))
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}))
}

async fn every_quota_answers_quota_exceeded(app: TestApp) {
    let app = with_small_quotas(&app).await;
    let acct = app.account().await;
    // Webhooks: v2.0 and JSON-RPC.
    for i in 0..2 {
        crate::webhooks::subscribe(
            &app,
            &acct,
            "sms.mo",
            &format!("http://127.0.0.1:9/h{i}"),
            json!(null),
        )
        .await;
    }
    let (status, body) = send(
        app.req(&acct, Method::POST, "/v2.0/webhooks?type=sms.mo")
            .json(&json!({"endpoint": "http://127.0.0.1:9/h3"})),
    )
    .await;
    assert_error(status, &body, 403, "quota_exceeded");
    let (_, v) = send(rpc(
        &app,
        &acct,
        "webhooks.subscribe",
        json!(["sms.mo", "http://127.0.0.1:9/h4", null]),
    ))
    .await;
    assert_eq!(v["error"]["code"], 100, "{v}");
    assert_eq!(v["error"]["data"]["code"], "quota_exceeded", "{v}");
    let (_, list) = send(app.req(&acct, Method::GET, "/v2.0/webhooks")).await;
    assert_eq!(list["total"], 2, "nothing added");

    // Runs running at once (and scenarios).
    let waiting = "branches:\n  api-initiated:\n    actions:\n      - action: wait@v1\n        params: {seconds: 600}\n";
    let sid = crate::actions::scenario(&app, &acct, waiting).await;
    crate::actions::scenario(&app, &acct, waiting).await;
    let (status, body) = send(
        app.req(&acct, Method::POST, "/v2.0/actions")
            .json(&json!({"name": "third", "script": waiting})),
    )
    .await;
    assert_error(status, &body, 403, "quota_exceeded");
    for _ in 0..2 {
        let (status, v) =
            send(app.req(&acct, Method::POST, &format!("/v2.0/actions/{sid}/runs"))).await;
        assert_eq!(status, 202, "{v}");
    }
    let (status, body) =
        send(app.req(&acct, Method::POST, &format!("/v2.0/actions/{sid}/runs"))).await;
    assert_error(status, &body, 403, "quota_exceeded");

    // Audio files and their bytes.
    let small = crate::hostile::wav_of_ms(500);
    crate::audio_files::upload(&app, &acct, "one", "audio/wav", &small).await;
    let big = crate::hostile::wav_of_ms(1_000);
    let (status, body) = crate::audio_files::send_multipart(
        &app,
        &acct,
        Method::POST,
        "/v2.0/audio-files",
        &[("name", None, b"two"), ("file", Some("audio/wav"), &big)],
    )
    .await;
    assert_error(status, &body, 403, "quota_exceeded");
    assert!(
        body["message"].as_str().unwrap().contains("bytes"),
        "{body}"
    );
    crate::audio_files::upload(&app, &acct, "two", "audio/wav", &small).await;
    let (status, body) = send(
        app.req(&acct, Method::POST, "/v2.0/audio-files")
            .json(&json!({"name": "three"})),
    )
    .await;
    assert_error(status, &body, 403, "quota_exceeded");
    let (_, v) = send(rpc(&app, &acct, "media/library.create", json!(["four"]))).await;
    assert_eq!(v["error"]["data"]["code"], "quota_exceeded", "{v}");
}

/// A small scenario that doubles a string until it is large: the run fails at the bound
/// (256 KiB of state and variables) instead of storing megabytes, and its GET stays small.
async fn a_run_that_grows_past_its_bound_fails(app: TestApp) {
    let acct = app.account().await;
    let script = "branches:\n  api-initiated:\n    actions:\n      - action: javascript@v1\n        params: {code: \"$big = 'x'.repeat(1000000)\"}\n      - action: log@v1\n        params: {message: never}\n";
    let sid = crate::actions::scenario(&app, &acct, script).await;
    let (status, v) =
        send(app.req(&acct, Method::POST, &format!("/v2.0/actions/{sid}/runs"))).await;
    assert_eq!(status, 202, "{v}");
    let run = v["runId"].as_str().unwrap().to_owned();
    let started = std::time::Instant::now();
    let (r, bytes) = loop {
        let resp = app
            .req(
                &acct,
                Method::GET,
                &format!("/v2.0/actions/{sid}/runs/{run}"),
            )
            .send()
            .await
            .expect("get");
        let bytes = resp.bytes().await.expect("body");
        let r: Value = serde_json::from_slice(&bytes).expect("json");
        if r["status"] != "running" {
            break (r, bytes);
        }
        assert!(
            started.elapsed() < std::time::Duration::from_secs(10),
            "{r}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    };
    assert_eq!(r["status"], "failed", "{r}");
    assert!(
        r["error"]
            .as_str()
            .unwrap_or("")
            .contains("the limit is 262144"),
        "{r}"
    );
    assert!(
        bytes.len() < 300_000,
        "the run's GET is {} bytes",
        bytes.len()
    );
}

async fn a_top_up_that_would_overflow_is_refused(app: TestApp) {
    let acct = app.account().await;
    let huge = "92233720368547758.07";
    let (status, body) = send(
        app.admin(
            Method::POST,
            &format!("/admin/accounts/{}/credit", acct.sid),
        )
        .json(&json!({"amount": huge})),
    )
    .await;
    let (status2, body2) = send(
        app.admin(
            Method::POST,
            &format!("/admin/accounts/{}/credit", acct.sid),
        )
        .json(&json!({"amount": huge})),
    )
    .await;
    // One of the two can fit at most; the other (or both) is refused with 400.
    assert!(status == 400 || status2 == 400, "{body} {body2}");
    let (_, credit) = send(app.req(&acct, Method::GET, "/v2.0/billing/credit")).await;
    assert!(
        credit["amount"].as_str().is_some(),
        "a readable balance: {credit}"
    );
    let refused = if status == 400 { &body } else { &body2 };
    assert_eq!(refused["code"], "validation_error", "{refused}");
}

/// Three reservations let lapse in an hour, then no more for the rest of it.
async fn numbers_cannot_be_held_again_and_again(app: TestApp) {
    let acct = app.account().await;
    for _ in 0..3 {
        let (status, r) = send(app.req(
            &acct,
            Method::POST,
            "/v2.0/numbers/store?country=GB&type=mobile",
        ))
        .await;
        assert_eq!(status, 200, "{r}");
        let token = r["token"].as_str().unwrap();
        let (status, _) = send(app.req(
            &acct,
            Method::DELETE,
            &format!("/v2.0/numbers/store/{token}"),
        ))
        .await;
        assert!(status.is_success());
    }
    let (status, body) = send(app.req(
        &acct,
        Method::POST,
        "/v2.0/numbers/store?country=GB&type=mobile",
    ))
    .await;
    assert_error(status, &body, 429, "rate_limited");
    app.clock.advance_ms(3_600_001);
    let (status, _) = send(app.req(
        &acct,
        Method::POST,
        "/v2.0/numbers/store?country=GB&type=mobile",
    ))
    .await;
    assert_eq!(status, 200, "an hour later");
}
