//! Webhook subscriptions and the signed, retried delivery engine.

use std::collections::HashSet;

use reqwest::Method;
use serde_json::{Value, json};

use crate::both_backends;
use crate::helpers::{TestAccount, TestApp, assert_error, send};
use crate::receiver::{Receiver, Reply, signature_ok};

both_backends!(
    subscriptions_crud_and_validation,
    deliveries_are_signed_and_shaped_as_the_seed_says,
    failing_receivers_are_retried_with_growing_waits,
    deliveries_die_after_try_ten_and_stay_visible,
    a_receiver_that_hangs_times_out,
    disabled_webhooks_receive_nothing,
    per_sms_webhooks_have_no_hook_hash,
    json_rpc_subscriptions,
    two_nodes_never_send_the_same_try_twice,
    a_try_lost_with_its_node_is_not_sent_again_under_its_number,
);

pub(crate) async fn subscribe(
    app: &TestApp,
    acct: &TestAccount,
    event_type: &str,
    endpoint: &str,
    options: Value,
) -> Value {
    let (status, w) = send(
        app.req(
            acct,
            Method::POST,
            &format!("/v2.0/webhooks?type={event_type}"),
        )
        .json(&json!({"endpoint": endpoint, "options": options})),
    )
    .await;
    assert_eq!(status, 201, "{w}");
    w
}

async fn buy_mobile(app: &TestApp, acct: &TestAccount) -> String {
    let (_, r) = send(app.req(
        acct,
        Method::POST,
        "/v2.0/numbers/store?country=GB&type=mobile",
    ))
    .await;
    let (_, b) = send(app.req(
        acct,
        Method::POST,
        &format!("/v2.0/numbers/store/{}", r["token"].as_str().unwrap()),
    ))
    .await;
    b["numbers"][0]["e164"].as_str().unwrap().to_owned()
}

async fn inbound(app: &TestApp, acct: &TestAccount, to: &str, body: &str) {
    let (status, r) = send(
        app.req(acct, Method::POST, "/sandbox/sms")
            .json(&json!({"from": "+33612345678", "to": to, "body": body})),
    )
    .await;
    assert_eq!(status, 201, "{r}");
}

async fn subscriptions_crud_and_validation(app: TestApp) {
    let acct = app.account().await;
    let w = subscribe(
        &app,
        &acct,
        "sms.mo",
        "https://example.org/hook",
        json!({"hmac_secret": "s3cret", "hmac_algo": "SHA512"}),
    )
    .await;
    let sid = w["sid"].as_str().unwrap().to_owned();
    assert_eq!(w["type"], "sms.mo");
    assert_eq!(w["status"], "enabled");
    assert_eq!(w["options"], json!({"hmac_algo": "SHA512"}));
    assert!(
        !w.to_string().contains("s3cret"),
        "the secret is never shown"
    );
    for (q, body, param) in [
        (
            "type=sms.sent",
            json!({"endpoint": "https://example.org"}),
            "type",
        ),
        ("", json!({"endpoint": "https://example.org"}), "type"),
        (
            "type=sms.mo",
            json!({"endpoint": "example.org/hook"}),
            "endpoint",
        ),
        (
            "type=sms.mo",
            json!({"endpoint": "ftp://example.org/hook"}),
            "endpoint",
        ),
        ("type=sms.mo", json!({}), "endpoint"),
        (
            "type=sms.mo",
            json!({"endpoint": "https://example.org", "options": {"hmac_algo": "MD5"}}),
            "options.hmac_algo",
        ),
        (
            "type=sms.mo",
            json!({"endpoint": "https://example.org", "options": {"colour": 1}}),
            "options.colour",
        ),
        (
            "type=sms.mo",
            json!({"endpoint": "https://example.org", "extra": 1}),
            "extra",
        ),
    ] {
        let (status, r) = send(
            app.req(&acct, Method::POST, &format!("/v2.0/webhooks?{q}"))
                .json(&body),
        )
        .await;
        assert_eq!(
            assert_error(status, &r, 400, "validation_error"),
            [param],
            "{q} {body}"
        );
    }
    subscribe(
        &app,
        &acct,
        "sms.mt.status_update",
        "https://example.org/mt",
        json!(null),
    )
    .await;
    let (_, list) = send(app.req(&acct, Method::GET, "/v2.0/webhooks")).await;
    assert_eq!(list["total"], 2);
    let (_, list) = send(app.req(&acct, Method::GET, "/v2.0/webhooks?type=sms.mo")).await;
    assert_eq!(list["total"], 1);
    let (_, list) = send(app.req(&acct, Method::GET, &format!("/v2.0/webhooks?sid={sid}"))).await;
    assert_eq!(list["hits"][0]["sid"], sid.as_str());
    let (status, r) = send(app.req(&acct, Method::GET, "/v2.0/webhooks?type=nope")).await;
    assert_eq!(assert_error(status, &r, 400, "validation_error"), ["type"]);
    let path = format!("/v2.0/webhooks/{sid}");
    let (status, r) = send(
        app.req(&acct, Method::PATCH, &path)
            .json(&json!({"endpoint": "https://evil.example"})),
    )
    .await;
    assert_eq!(
        assert_error(status, &r, 400, "validation_error"),
        ["endpoint"]
    );
    let (status, r) = send(
        app.req(&acct, Method::PATCH, &path)
            .json(&json!({"status": "paused"})),
    )
    .await;
    assert_eq!(
        assert_error(status, &r, 400, "validation_error"),
        ["status"]
    );
    app.clock.advance_ms(1000);
    let (status, r) = send(
        app.req(&acct, Method::PATCH, &path)
            .json(&json!({"status": "disabled", "options": {"hmac_algo": "SHA256"}})),
    )
    .await;
    assert_eq!(status, 200, "{r}");
    assert_eq!(r["status"], "disabled");
    assert_eq!(r["options"]["hmac_algo"], "SHA256");
    assert_eq!(r["updated"], "2025-06-01T12:00:01.000Z");
    assert_eq!(r["endpoint"], "https://example.org/hook");
    let (_, list) = send(app.req(&acct, Method::GET, "/v2.0/webhooks?status=disabled")).await;
    assert_eq!(list["total"], 1);
    let other = app.account().await;
    for m in [Method::GET, Method::DELETE] {
        let (status, r) = send(app.req(&other, m, &path)).await;
        assert_error(status, &r, 404, "not_found");
    }
    let (status, _) = send(app.req(&acct, Method::DELETE, &path)).await;
    assert_eq!(status, 204);
    let (status, r) = send(app.req(&acct, Method::GET, &path)).await;
    assert_error(status, &r, 404, "not_found");
}

async fn deliveries_are_signed_and_shaped_as_the_seed_says(app: TestApp) {
    let acct = app.account().await;
    let receiver = Receiver::start().await;
    let w = subscribe(
        &app,
        &acct,
        "sms.mt.status_update",
        &receiver.url,
        json!({"hmac_secret": "whsec_test"}),
    )
    .await;
    let (status, sms) = send(
        app.req(&acct, Method::POST, "/v2.0/sms?to=%2B33612345678")
            .json(&json!({"body": "hi"})),
    )
    .await;
    assert_eq!(status, 202);
    for _ in 0..4 {
        app.tick().await;
        app.clock.advance_ms(200);
    }
    app.tick().await;
    let got = receiver.received();
    assert_eq!(got.len(), 4);
    let statuses: Vec<&str> = got
        .iter()
        .map(|r| r.json["data"]["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, ["PENDING", "SENT", "REMOTE_QUEUED", "DELIVERED"]);
    let mut ids = HashSet::new();
    for r in &got {
        assert!(
            signature_ok(r, "SVC", "whsec_test"),
            "the signature verifies"
        );
        assert!(
            !signature_ok(r, "SVC", "other"),
            "and only with the right secret"
        );
        assert_eq!(r.headers["content-type"], "application/json");
        assert!(
            r.headers["user-agent"]
                .to_str()
                .unwrap()
                .starts_with("dialtone")
        );
        let env = &r.json;
        let mut keys: Vec<&str> = env
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        keys.sort();
        assert_eq!(
            keys,
            ["data", "event_at", "event_id", "hook_hash", "try", "type"]
        );
        assert_eq!(
            r.headers["x-svc-eventid"].to_str().unwrap(),
            env["event_id"].as_str().unwrap()
        );
        assert_eq!(env["hook_hash"], w["sid"].as_str().unwrap().to_uppercase());
        assert_eq!(env["try"], 0);
        assert_eq!(env["type"], "sms.mt.status_update");
        assert_eq!(
            env["data"]["hash"],
            sms["sid"].as_str().unwrap().to_uppercase()
        );
        assert!(env["event_at"].as_str().unwrap().ends_with('Z'));
        ids.insert(env["event_id"].as_str().unwrap().to_owned());
    }
    assert_eq!(ids.len(), 4, "every event has its own id");
    assert_eq!(got[0].json["event_at"], "2025-06-01T12:00:00.000Z");
    let (_, log) = send(app.req(
        &acct,
        Method::GET,
        &format!(
            "/v2.0/webhooks/{}/deliveries?order=asc",
            w["sid"].as_str().unwrap()
        ),
    ))
    .await;
    assert_eq!(log["total"], 4);
    assert_eq!(log["hits"][0]["statusCode"], 200);
    assert_eq!(log["hits"][0]["try"], 0);
    assert_eq!(log["hits"][0]["deliveryStatus"], "delivered");
}

async fn failing_receivers_are_retried_with_growing_waits(app: TestApp) {
    let acct = app.account().await;
    let number = buy_mobile(&app, &acct).await;
    let receiver = Receiver::start().await;
    receiver.script(&[Reply::Status(500), Reply::Status(404)], None);
    let w = subscribe(
        &app,
        &acct,
        "sms.mo",
        &receiver.url,
        json!({"hmac_secret": "k"}),
    )
    .await;
    inbound(&app, &acct, &number, "hello").await;
    app.tick().await;
    assert_eq!(receiver.received().len(), 1, "try 0 at once");
    app.tick().await;
    app.clock.advance_ms(9_999);
    app.tick().await;
    assert_eq!(receiver.received().len(), 1, "try 1 waits 10 s");
    app.clock.advance_ms(1);
    app.tick().await;
    assert_eq!(receiver.received().len(), 2);
    app.clock.advance_ms(19_999);
    app.tick().await;
    assert_eq!(receiver.received().len(), 2, "try 2 waits 20 s");
    app.clock.advance_ms(1);
    app.tick().await;
    let got = receiver.received();
    assert_eq!(got.len(), 3);
    let tries: Vec<i64> = got
        .iter()
        .map(|r| r.json["try"].as_i64().unwrap())
        .collect();
    assert_eq!(tries, [0, 1, 2]);
    assert!(
        got.iter()
            .all(|r| r.json["event_id"] == got[0].json["event_id"]),
        "the same event each time"
    );
    assert!(
        got.iter().all(|r| signature_ok(r, "SVC", "k")),
        "every try is signed for its own body"
    );
    app.clock.advance_ms(3_600_000);
    app.tick().await;
    assert_eq!(receiver.received().len(), 3, "delivered: no more tries");
    let (_, log) = send(app.req(
        &acct,
        Method::GET,
        &format!(
            "/v2.0/webhooks/{}/deliveries?order=asc",
            w["sid"].as_str().unwrap()
        ),
    ))
    .await;
    let codes: Vec<i64> = log["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["statusCode"].as_i64().unwrap())
        .collect();
    assert_eq!(codes, [500, 404, 200]);
    assert_eq!(log["hits"][0]["error"], "HTTP 500");
}

async fn deliveries_die_after_try_ten_and_stay_visible(app: TestApp) {
    let acct = app.account().await;
    let number = buy_mobile(&app, &acct).await;
    let receiver = Receiver::start().await;
    receiver.script(&[], Some(Reply::Status(503)));
    let w = subscribe(&app, &acct, "sms.mo", &receiver.url, json!(null)).await;
    inbound(&app, &acct, &number, "hello").await;
    for n in 0..=10 {
        app.tick().await;
        assert_eq!(receiver.received().len(), n + 1);
        app.clock.advance_ms((n as i64 + 1) * 10_000);
    }
    app.clock.advance_ms(86_400_000);
    app.tick().await;
    let got = receiver.received();
    assert_eq!(got.len(), 11, "tries 0 to 10, then dead");
    assert_eq!(got.last().unwrap().json["try"], 10);
    let (_, log) = send(app.req(
        &acct,
        Method::GET,
        &format!(
            "/v2.0/webhooks/{}/deliveries?limit=100",
            w["sid"].as_str().unwrap()
        ),
    ))
    .await;
    assert_eq!(log["total"], 11);
    assert!(
        log["hits"]
            .as_array()
            .unwrap()
            .iter()
            .all(|h| h["deliveryStatus"] == "dead")
    );
}

async fn a_receiver_that_hangs_times_out(app: TestApp) {
    let app = TestApp::spawn_with(app.backend, |c| c.webhook_timeout_ms = 300)
        .await
        .unwrap();
    let acct = app.account().await;
    let number = buy_mobile(&app, &acct).await;
    let receiver = Receiver::start().await;
    receiver.script(&[Reply::Hang], None);
    let w = subscribe(&app, &acct, "sms.mo", &receiver.url, json!(null)).await;
    // And a receiver that does not exist at all (connection refused).
    let refused = subscribe(
        &app,
        &acct,
        "sms.mo",
        "http://127.0.0.1:9/hook",
        json!(null),
    )
    .await;
    inbound(&app, &acct, &number, "hello").await;
    app.tick().await;
    let (_, log) = send(app.req(
        &acct,
        Method::GET,
        &format!("/v2.0/webhooks/{}/deliveries", w["sid"].as_str().unwrap()),
    ))
    .await;
    assert_eq!(
        log["hits"][0]["error"], "no answer within the timeout",
        "{log}"
    );
    assert_eq!(log["hits"][0]["statusCode"], Value::Null);
    assert_eq!(log["hits"][0]["deliveryStatus"], "pending");
    let (_, log) = send(app.req(
        &acct,
        Method::GET,
        &format!(
            "/v2.0/webhooks/{}/deliveries",
            refused["sid"].as_str().unwrap()
        ),
    ))
    .await;
    assert!(
        log["hits"][0]["error"]
            .as_str()
            .unwrap()
            .starts_with("connection error"),
        "{log}"
    );
    app.clock.advance_ms(10_000);
    app.tick().await;
    assert_eq!(
        receiver.received().len(),
        2,
        "retried after the timeout; the second try is answered"
    );
}

async fn disabled_webhooks_receive_nothing(app: TestApp) {
    let acct = app.account().await;
    let number = buy_mobile(&app, &acct).await;
    let receiver = Receiver::start().await;
    let w = subscribe(&app, &acct, "sms.mo", &receiver.url, json!(null)).await;
    let path = format!("/v2.0/webhooks/{}", w["sid"].as_str().unwrap());
    // Queued, then disabled before the worker runs: not sent.
    inbound(&app, &acct, &number, "one").await;
    send(
        app.req(&acct, Method::PATCH, &path)
            .json(&json!({"status": "disabled"})),
    )
    .await;
    inbound(&app, &acct, &number, "two").await;
    app.tick().await;
    assert!(receiver.received().is_empty());
    send(
        app.req(&acct, Method::PATCH, &path)
            .json(&json!({"status": "enabled"})),
    )
    .await;
    app.tick().await;
    assert!(
        receiver.received().is_empty(),
        "events from the disabled time stay unsent"
    );
    inbound(&app, &acct, &number, "three").await;
    app.tick().await;
    let got = receiver.received();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].json["data"]["text"], "three");
    // Another account's events never reach this webhook.
    let other = app.account().await;
    let theirs = buy_mobile(&app, &other).await;
    inbound(&app, &other, &theirs, "not yours").await;
    app.tick().await;
    assert_eq!(receiver.received().len(), 1);
}

async fn per_sms_webhooks_have_no_hook_hash(app: TestApp) {
    let acct = app.account().await;
    let receiver = Receiver::start().await;
    let (status, _) = send(
        app.req(&acct, Method::POST, "/v2.0/sms?to=%2B447700900001")
            .json(&json!({"body": "x", "webhook": {"endpoint": receiver.url}})),
    )
    .await;
    assert_eq!(status, 202);
    for _ in 0..4 {
        app.tick().await;
        app.clock.advance_ms(200);
    }
    let got = receiver.received();
    let statuses: Vec<&str> = got
        .iter()
        .map(|r| r.json["data"]["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, ["PENDING", "SENT", "FAILED"]);
    assert!(got.iter().all(|r| r.json["hook_hash"].is_null()));
    assert!(
        got.iter()
            .all(|r| r.headers.get("x-svc-hmacsignature").is_none()),
        "no secret, no signature"
    );
}

async fn json_rpc_subscriptions(app: TestApp) {
    let acct = app.account().await;
    let rpc =
        |method: &'static str, params: Value| crate::jsonrpc::rpc(&app, &acct, method, params);
    let types = rpc("webhooks.get_event_types", json!([])).await;
    assert_eq!(types["result"].as_array().unwrap().len(), 15);
    let sub = rpc(
        "webhooks.subscribe",
        json!(["sms.mo", "https://example.org/mo", {"hmac_secret": "x"}]),
    )
    .await;
    let hash = sub["result"]["hash"].as_str().unwrap().to_owned();
    assert_eq!(sub["result"]["type"], "sms.mo");
    assert!(!sub.to_string().contains("\"x\""));
    let bad = rpc(
        "webhooks.subscribe",
        json!(["sms.nope", "https://example.org/mo", null]),
    )
    .await;
    assert_eq!(bad["error"]["code"], 151);
    let list = rpc("webhooks.get_list", json!([])).await;
    assert_eq!(list["result"].as_array().unwrap().len(), 1);
    let (_, v2) = send(app.req(&acct, Method::GET, "/v2.0/webhooks")).await;
    assert_eq!(
        v2["hits"][0]["sid"],
        hash.to_lowercase(),
        "the same webhook on v2.0"
    );
    assert_eq!(
        rpc("webhooks.unsubscribe", json!([hash])).await["result"],
        true
    );
    assert_eq!(
        rpc("webhooks.unsubscribe", json!([hash])).await["error"]["code"],
        115
    );
}

async fn two_nodes_never_send_the_same_try_twice(app: TestApp) {
    let acct = app.account().await;
    let receiver = Receiver::start().await;
    subscribe(&app, &acct, "billing.credit", &receiver.url, json!(null)).await;
    let sid = dialtone_domain::Sid::parse(&acct.sid).unwrap();
    let now = dialtone_domain::Clock::now(&app.clock);
    app.state
        .store
        .write(move |c| {
            let account = dialtone_store::accounts::by_sid(c, &sid)?.unwrap();
            for i in 0..1000 {
                dialtone_store::events::emit(
                    c,
                    account.id,
                    "billing.credit",
                    &json!({"n": i}).to_string(),
                    now,
                )?;
            }
            Ok::<_, dialtone_store::DbError>(())
        })
        .await
        .unwrap();
    let (_, second) = app.second_node().await;
    let first = app.state.clone();
    // Each node ticks until nothing is due (its tries end before it looks again).
    let until_done = |node: dialtone::state::AppState| async move {
        let mut n = 0;
        loop {
            let k = dialtone::workers::tick(&node).await.unwrap();
            node.deliveries.settled().await;
            if k == 0 {
                break n;
            }
            n += k;
        }
    };
    let a = tokio::spawn(until_done(first));
    let b = tokio::spawn(until_done(second));
    let (na, nb) = (a.await.unwrap(), b.await.unwrap());
    let got = receiver.received();
    let pairs: HashSet<(String, i64)> = got
        .iter()
        .map(|r| {
            (
                r.json["event_id"].as_str().unwrap().to_owned(),
                r.json["try"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        got.len(),
        1000,
        "every event once (node a: {na}, node b: {nb})"
    );
    assert_eq!(pairs.len(), 1000, "no (event, try) twice");
    let values: HashSet<i64> = got
        .iter()
        .map(|r| r.json["data"]["n"].as_i64().unwrap())
        .collect();
    assert_eq!(values.len(), 1000);
}

/// A node claims a delivery and dies before recording it (it may or may not have sent it):
/// once the claim's lease ends, another node sends the next try number, never the same
/// one again, and a late record from the dead claim changes nothing.
async fn a_try_lost_with_its_node_is_not_sent_again_under_its_number(app: TestApp) {
    let acct = app.account().await;
    let receiver = Receiver::start().await;
    subscribe(&app, &acct, "billing.credit", &receiver.url, json!(null)).await;
    let sid = dialtone_domain::Sid::parse(&acct.sid).unwrap();
    let now = dialtone_domain::Clock::now(&app.clock);
    let lost = app
        .state
        .store
        .write(move |c| {
            let account = dialtone_store::accounts::by_sid(c, &sid)?.unwrap();
            dialtone_store::events::emit(c, account.id, "billing.credit", "{}", now)?;
            // The node that dies: it claims the delivery and never records the try.
            dialtone_store::deliveries::claim(
                c,
                now,
                30_000,
                10,
                &Default::default(),
                i64::MIN,
                &mut |_| true,
            )
        })
        .await
        .unwrap()
        .due;
    assert_eq!(lost.len(), 1);
    assert_eq!(lost[0].try_number, 0);
    // Within the lease nobody else sends it.
    app.tick().await;
    assert!(receiver.received().is_empty());
    app.clock.advance_ms(30_001);
    app.tick().await;
    let got = receiver.received();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].json["try"], 1, "the lost claim used up try 0");
    // The dead node's record arrives late: the delivery stays delivered.
    let attempt = dialtone_store::deliveries::Attempt {
        delivery_id: lost[0].id,
        try_number: 0,
        status_code: None,
        duration_ms: 5,
        error: Some("timeout".into()),
    };
    let later = now.plus_ms(40_000);
    app.state
        .store
        .write(move |c| {
            dialtone_store::deliveries::record(
                c,
                &attempt,
                dialtone_store::deliveries::Next::RetryAt(later),
                later,
            )
        })
        .await
        .unwrap();
    app.clock.advance_ms(60_000);
    app.tick().await;
    assert_eq!(receiver.received().len(), 1, "delivered once, not retried");
}
