//! Per-account rate limits: the node's default, the burst, Retry-After, the injected clock,
//! operator overrides, and every interface counted.

use reqwest::Method;
use serde_json::json;

use crate::both_backends;
use crate::helpers::{TestApp, assert_error, send};
use crate::jsonrpc::rpc;

both_backends!(requests_over_the_rate_are_429_until_the_bucket_refills);

async fn requests_over_the_rate_are_429_until_the_bucket_refills(app: TestApp) {
    let app = TestApp::spawn_with(app.backend, |c| {
        c.rate_limit = 2;
        c.rate_burst = 3;
    })
    .await
    .expect("app");
    let acct = app.account().await;
    let other = app.account().await;
    let ping = || app.req(&acct, Method::GET, "/v2.0/ping");
    // Wrong credentials are 401 and count for nobody.
    for _ in 0..5 {
        let (status, _) = send(
            app.anon(Method::GET, "/v2.0/ping")
                .header("x-api-key", "dt_nope"),
        )
        .await;
        assert_eq!(status, 401);
    }
    for i in 0..3 {
        let (status, body) = send(ping()).await;
        assert_eq!(status, 200, "request {i} of the burst: {body}");
    }
    let refused = ping().send().await.unwrap();
    assert_eq!(refused.status(), 429);
    assert_eq!(refused.headers()["retry-after"], "1");
    let body: serde_json::Value = refused.json().await.unwrap();
    assert_eq!(body["code"], "rate_limited");
    // A refused request changes nothing: no SMS is sent.
    let (status, body) = send(
        app.req(&acct, Method::POST, "/v2.0/sms?to=%2B33612345678")
            .json(&json!({"body": "x"})),
    )
    .await;
    assert_error(status, &body, 429, "rate_limited");
    // Another account has its own bucket.
    let (status, _) = send(app.req(&other, Method::GET, "/v2.0/ping")).await;
    assert_eq!(status, 200);
    // 2 per second: one more every 500 ms.
    app.clock.advance_ms(499);
    assert_eq!(send(ping()).await.0, 429);
    app.clock.advance_ms(1);
    assert_eq!(send(ping()).await.0, 200);
    assert_eq!(send(ping()).await.0, 429);
    // The earlier interfaces count too: JSON-RPC says so with its own error.
    let answer = rpc(&app, &acct, "system.get_timestamp", json!([])).await;
    assert_eq!(answer["error"]["code"], 100, "{answer}");
    assert_eq!(answer["error"]["data"]["code"], "rate_limited");

    // The operator lifts the limit of one account (0), then gives it back the default (null).
    let path = format!("/admin/accounts/{}", acct.sid);
    for bad in [
        json!({"rateLimit": -1}),
        json!({"rateBurst": "ten"}),
        json!({"rateLimit": 1_000_001}),
    ] {
        let (status, body) = send(app.admin(Method::PATCH, &path).json(&bad)).await;
        assert_error(status, &body, 400, "validation_error");
    }
    let (status, view) = send(
        app.admin(Method::PATCH, &path)
            .json(&json!({"rateLimit": 0})),
    )
    .await;
    assert_eq!(status, 200, "{view}");
    assert_eq!(view["rateLimit"], 0);
    for _ in 0..20 {
        assert_eq!(send(ping()).await.0, 200);
    }
    let (_, view) = send(
        app.admin(Method::PATCH, &path)
            .json(&json!({"rateLimit": 1, "rateBurst": 1})),
    )
    .await;
    assert_eq!(
        (view["rateLimit"].as_i64(), view["rateBurst"].as_i64()),
        (Some(1), Some(1))
    );
    app.clock.advance_ms(10_000);
    assert_eq!(send(ping()).await.0, 200);
    let refused = ping().send().await.unwrap();
    assert_eq!(refused.status(), 429);
    assert_eq!(refused.headers()["retry-after"], "1");
    let (_, view) = send(
        app.admin(Method::PATCH, &path)
            .json(&json!({"rateLimit": null, "rateBurst": null})),
    )
    .await;
    assert_eq!(view["rateLimit"], serde_json::Value::Null);
    app.clock.advance_ms(10_000);
    for _ in 0..3 {
        assert_eq!(send(ping()).await.0, 200, "the default burst of 3 again");
    }
    assert_eq!(send(ping()).await.0, 429);
}
