//! The earlier JSON-RPC interface: the protocol, and numbers through it.

use reqwest::Method;
use serde_json::{Value, json};

use crate::both_backends;
use crate::helpers::{TestAccount, TestApp, send};

both_backends!(
    protocol_errors_are_json_rpc_errors_with_200,
    numbers_through_json_rpc
);

/// Calls a method with Basic login:password; returns the whole response object.
pub async fn rpc(app: &TestApp, acct: &TestAccount, method: &str, params: Value) -> Value {
    let (status, body) = send(
        app.anon(Method::POST, "/json-rpc/v1.1/")
            .basic_auth(&acct.login, Some(&acct.password))
            .header("content-type", "application/json-rpc; charset=utf-8")
            .json(&json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})),
    )
    .await;
    assert_eq!(status, 200, "JSON-RPC always answers 200: {body}");
    assert_eq!(body["jsonrpc"], "2.0");
    body
}

async fn protocol_errors_are_json_rpc_errors_with_200(app: TestApp) {
    let acct = app.account().await;
    let raw = |body: &'static str| {
        app.anon(Method::POST, "/json-rpc/v1.1/")
            .basic_auth(&acct.login, Some(&acct.password))
            .body(body)
    };
    let (status, body) = send(raw("{nope")).await;
    assert_eq!(status, 200);
    assert_eq!(body["error"]["code"], -32700);
    assert_eq!(body["id"], Value::Null);
    for (req, code) in [
        (
            r#"[{"jsonrpc":"2.0","id":1,"method":"system.get_timestamp"}]"#,
            -32600,
        ),
        (
            r#"{"jsonrpc":"1.0","id":1,"method":"system.get_timestamp"}"#,
            -32600,
        ),
        (r#"{"jsonrpc":"2.0","id":1}"#, -32600),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"system.get_timestamp","params":{"a":1}}"#,
            -32602,
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"no.such_method","params":[]}"#,
            -32601,
        ),
    ] {
        let (status, body) = send(raw(req)).await;
        assert_eq!(status, 200);
        assert_eq!(body["error"]["code"], code, "{req}: {body}");
        assert!(body["error"]["message"].as_str().is_some());
        assert!(body["error"].get("data").is_some());
    }
    let r = rpc(&app, &acct, "did/store.view_order", json!([])).await;
    assert_eq!(r["error"]["code"], 150, "missing property: {r}");
    let r = rpc(&app, &acct, "did/store.view_order", json!(["x".repeat(48)])).await;
    assert_eq!(r["error"]["code"], 115, "not found: {r}");
}

async fn numbers_through_json_rpc(app: TestApp) {
    let acct = app.account().await;
    let countries = rpc(&app, &acct, "did/areacode.countries", json!([])).await;
    assert!(
        countries["result"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["code"] == "GB")
    );
    let types = rpc(&app, &acct, "did/areacode.types", json!(["GB"])).await;
    assert!(
        types["result"]
            .as_array()
            .unwrap()
            .contains(&json!("GEOGRAPHIC"))
    );
    let list = rpc(
        &app,
        &acct,
        "did/areacode.get_list",
        json!(["GB", "GEOGRAPHIC"]),
    )
    .await;
    let london = list["result"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["name"] == "London")
        .cloned()
        .unwrap();
    let r = rpc(
        &app,
        &acct,
        "did/store.reserve",
        json!([london["id"], "CLASSIC", 2, "RANDOM"]),
    )
    .await;
    let token = r["result"]["token"].as_str().unwrap().to_owned();
    assert_eq!(r["result"]["items"].as_array().unwrap().len(), 2);
    assert_eq!(r["result"]["expire"], "2025-06-01 12:05:00");
    let view = rpc(&app, &acct, "did/store.view_order", json!([token])).await;
    assert_eq!(view["result"]["status"], "RESERVED");
    let bought = rpc(&app, &acct, "did/store.buy_order", json!([token])).await;
    let success = bought["result"]["success"].as_array().unwrap();
    assert_eq!(success.len(), 2);
    assert_eq!(success[0]["intl_number"], "+442079460000");
    assert_eq!(bought["result"]["customer_debit"], "400.00");
    let search = rpc(&app, &acct, "did.search", json!([{}, {}])).await;
    assert_eq!(search["result"]["total"], 2);
    assert_eq!(search["result"]["has_more"], false);
    let hash = search["result"]["hits"][0]["hash"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(search["result"]["hits"][0]["type"], "GEOGRAPHIC");
    let cancel = rpc(&app, &acct, "did/store.cancel_subscription", json!([hash])).await;
    assert_eq!(cancel["result"], true);
    let search = rpc(&app, &acct, "did.search", json!([{}, {}])).await;
    assert_eq!(search["result"]["total"], 1);
    // The same through v2.0.
    let (_, list) = send(app.req(&acct, Method::GET, "/v2.0/numbers")).await;
    assert_eq!(list["total"], 1);
    // A second order after buying, then cancelled.
    let r = rpc(
        &app,
        &acct,
        "did/store.reserve",
        json!([london["id"], "CLASSIC", 1, "RANDOM"]),
    )
    .await;
    let token = r["result"]["token"].as_str().unwrap().to_owned();
    assert_eq!(
        rpc(&app, &acct, "did/store.cancel_order", json!([token])).await["result"],
        true
    );
    let again = rpc(&app, &acct, "did/store.buy_order", json!([token])).await;
    assert_eq!(again["error"]["code"], 151);
    assert_eq!(again["error"]["data"]["code"], "reservation_expired");
}
