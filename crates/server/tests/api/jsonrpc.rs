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
pub(crate) async fn rpc(app: &TestApp, acct: &TestAccount, method: &str, params: Value) -> Value {
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

both_backends!(sms_through_json_rpc_and_rest_1_1);

async fn sms_through_json_rpc_and_rest_1_1(app: TestApp) {
    let acct = app.account().await;
    let sent = rpc(&app, &acct, "sms.send", json!(["SMS", "+33612345678", "Hi", {"user_data": "7", "webhook": {"endpoint": "http://127.0.0.1:9/hook"}}])).await;
    let hash = sent["result"].as_str().unwrap().to_owned();
    app.tick().await;
    let got = rpc(&app, &acct, "sms.get", json!([hash])).await;
    assert_eq!(got["result"]["status"], "PENDING");
    assert_eq!(
        got["result"]["options"]["webhook"]["endpoint"],
        "http://127.0.0.1:9/hook"
    );
    assert_eq!(got["result"]["status_history"][0]["new_status"], "PENDING");
    for (params, code) in [
        (json!(["SMS", "33612345678", "Hi", null]), 151),
        (json!(["bad sender!", "+33612345678", "Hi", null]), 151),
        (json!(["SMS", "+33612345678", "Hi", {"colour": "red"}]), 151),
        (json!(["SMS", "+33612345678"]), 150),
        (json!(["NOTAPPROVED", "+33612345678", "Hi", null]), 100),
    ] {
        let r = rpc(&app, &acct, "sms.send", params.clone()).await;
        assert_eq!(r["error"]["code"], code, "{params}: {r}");
    }
    let list = rpc(
        &app,
        &acct,
        "sms.get_list",
        json!(["OUT", "2025-06-01 00:00:00", "2025-06-02 00:00:00"]),
    )
    .await;
    assert_eq!(list["result"].as_array().unwrap().len(), 1);
    let bad = rpc(&app, &acct, "sms.get_list", json!(["SIDEWAYS", null, null])).await;
    assert_eq!(bad["error"]["code"], 151);

    // SMS REST v1.1.
    let rest = |m: Method, path: &str| {
        app.anon(m, &format!("/rest/v1.1{path}"))
            .basic_auth(&acct.login, Some(&acct.password))
    };
    let (status, r) = send(rest(Method::POST, "/sms").json(
        &json!({"from": "SMS", "to": "+33612345678", "body": "Stop: %STOPNUM%", "options": null}),
    ))
    .await;
    assert_eq!(status, 200, "{r}");
    assert_eq!(r["status"], "success");
    let h = r["data"].as_str().unwrap().to_owned();
    let (status, one) = send(rest(Method::GET, &format!("/sms/{h}"))).await;
    assert_eq!(status, 200);
    assert_eq!(
        one["data"]["text"], "Stop: +447700900000",
        "%STOPNUM% replaced for a custom sender"
    );
    let (status, r) = send(rest(
        Method::GET,
        "/sms/send?to=%2B33612345678&body=Query+send&options.flash_message=true",
    ))
    .await;
    assert_eq!(status, 200, "{r}");
    let q = r["data"].as_str().unwrap().to_owned();
    let (_, one) = send(rest(Method::GET, &format!("/sms/{q}"))).await;
    assert_eq!(one["data"]["options"]["flash_message"], true);
    assert_eq!(one["data"]["text"], "Query send");
    let (status, list) = send(rest(
        Method::GET,
        "/sms?type=OUT&from=2025-06-01%2000:00:00&to=2025-06-02%2000:00:00",
    ))
    .await;
    assert_eq!(status, 200);
    assert_eq!(list["data"].as_array().unwrap().len(), 3);
    let (status, e) = send(rest(Method::GET, "/sms/ZZZZZZZZ")).await;
    assert_eq!(status, 404);
    assert_eq!(
        e,
        json!({"status": "error", "data": {"code": 404, "message": "SMS not found"}})
    );
    let (status, e) = send(rest(Method::POST, "/sms").json(&json!({"to": "+33612345678"}))).await;
    assert_eq!(status, 400);
    assert_eq!(e["status"], "error");
    assert_eq!(e["data"]["code"], 400);
    let (status, e) = send(
        app.anon(Method::GET, "/rest/v1.1/sms/ZZZZZZZZ")
            .basic_auth(&acct.login, Some("wrong")),
    )
    .await;
    assert_eq!(status, 401);
    assert_eq!(e["status"], "error");
    let (status, _) = send(
        app.anon(Method::GET, &format!("/rest/v1.1/sms/{q}"))
            .header("authorization", format!("Api-Key {}", acct.api_key)),
    )
    .await;
    assert_eq!(status, 200, "Api-Key works on REST v1.1");
}
