//! What clients written for the real service send through JSON-RPC: the search envelope of
//! `apps.search`, integers as strings of digits, the SDKs' "login as" header; and v2.0
//! refusing unknown query parameters on every operation.

use reqwest::Method;
use serde_json::{Value, json};

use crate::both_backends;
use crate::helpers::{TestAccount, TestApp, send};
use crate::jsonrpc::rpc;

both_backends!(
    apps_search_answers_the_search_envelope,
    integers_may_be_strings_of_digits,
    login_as_acts_on_a_sub_account_and_refuses_the_rest,
    every_v2_operation_refuses_unknown_query_parameters,
);

const SCRIPT: &str = "branches:\n  api-initiated:\n    actions:\n      - action: log@v1\n        params: { message: hi }\n";

async fn apps_search_answers_the_search_envelope(app: TestApp) {
    let acct = app.account().await;
    for name in ["alpha", "beta", "alphabet"] {
        let r = rpc(
            &app,
            &acct,
            "apps.create",
            json!(["ACTIONS10", name, {"format": "YAML", "script": SCRIPT}]),
        )
        .await;
        assert!(r["result"]["hash"].is_string(), "{r}");
    }
    // As the published example's list-scenarios calls it.
    let r = rpc(&app, &acct, "apps.search", json!([{}, {}])).await;
    let found = &r["result"];
    assert_eq!(found["total"], 3, "{r}");
    assert_eq!(found["offset"], 0);
    assert_eq!(found["has_more"], false);
    assert_eq!(found["hits"].as_array().map(Vec::len), Some(3));
    assert_eq!(found["hits"][0]["package"]["name"], "ACTIONS10");
    assert!(found["hits"][0]["date_creation"].is_string());
    let r = rpc(
        &app,
        &acct,
        "apps.search",
        json!([{"name": "alpha"}, {"limit": 1}]),
    )
    .await;
    assert_eq!(r["result"]["total"], 2, "{r}");
    assert_eq!(r["result"]["hits"].as_array().map(Vec::len), Some(1));
    assert_eq!(r["result"]["has_more"], true);
    let r = rpc(
        &app,
        &acct,
        "apps.search",
        json!([{"package": "REALTIME10"}, null]),
    )
    .await;
    assert_eq!(r["result"]["total"], 0, "{r}");
    for bad in [
        json!(["x", {}]),
        json!([{}, {"limit": 101}]),
        json!([{"name": ""}, {}]),
    ] {
        let r = rpc(&app, &acct, "apps.search", bad.clone()).await;
        assert_eq!(r["error"]["code"], 151, "{bad}: {r}");
    }
    // apps.get_list stays a plain list; `false` leaves the numbers out.
    let r = rpc(&app, &acct, "apps.get_list", json!([false])).await;
    assert_eq!(r["result"].as_array().map(Vec::len), Some(3), "{r}");
}

async fn integers_may_be_strings_of_digits(app: TestApp) {
    let acct = app.account().await;
    let list = rpc(&app, &acct, "did/areacode.get_list", json!(["GB", null])).await;
    let area = list["result"][0]["id"].as_i64().expect("an area code id");
    // `npm run buy-number 1`: the id arrives as a string, and so may the quantity.
    let r = rpc(
        &app,
        &acct,
        "did/store.reserve",
        json!([area.to_string(), "CLASSIC", "1", "RANDOM"]),
    )
    .await;
    assert_eq!(
        r["result"]["items"].as_array().map(Vec::len),
        Some(1),
        "{r}"
    );
    let r = rpc(
        &app,
        &acct,
        "did.search",
        json!([{}, {"offset": "0", "limit": "5"}]),
    )
    .await;
    assert_eq!(r["result"]["offset"], 0, "{r}");
    for bad in [
        json!(["1x", "CLASSIC", 1, "RANDOM"]),
        json!([" ", "CLASSIC", 1, "RANDOM"]),
        json!([1.5, "CLASSIC", 1, "RANDOM"]),
        json!([area, "CLASSIC", "one", "RANDOM"]),
    ] {
        let r = rpc(&app, &acct, "did/store.reserve", bad.clone()).await;
        assert_eq!(r["error"]["code"], 151, "{bad}: {r}");
    }
    let r = rpc(
        &app,
        &acct,
        "did.search",
        json!([{}, {"limit": "9999999999999999999999"}]),
    )
    .await;
    assert_eq!(r["error"]["code"], 151, "{r}");
}

/// A JSON-RPC call by `acct` carrying `SVC-Login-As: value`.
async fn rpc_as(
    app: &TestApp,
    acct: &TestAccount,
    value: &str,
    method: &str,
    params: Value,
) -> Value {
    let (status, body) = send(
        app.anon(Method::POST, "/json-rpc/v1.1/")
            .basic_auth(&acct.login, Some(&acct.password))
            .header("SVC-Login-As", value)
            .json(&json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params})),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    body
}

async fn credit(app: &TestApp, acct: &TestAccount) -> f64 {
    let (_, v) = send(app.req(acct, Method::GET, "/v2.0/billing/credit")).await;
    v["amount"]
        .as_str()
        .expect("amount")
        .parse()
        .expect("a number")
}

async fn login_as_acts_on_a_sub_account_and_refuses_the_rest(app: TestApp) {
    let master = app.account().await;
    let sub = app.sub_account(&master, "1000.00").await;
    let stranger = app.account().await;
    let (master_before, sub_before) = (credit(&app, &master).await, credit(&app, &sub).await);
    let by_hash = format!("account.hash {}", sub.sid.to_uppercase());
    let r = rpc_as(
        &app,
        &master,
        &by_hash,
        "sms.send",
        json!(["SMS", "+33612345678", "for the sub account", null]),
    )
    .await;
    let hash = r["result"]
        .as_str()
        .unwrap_or_else(|| panic!("sent: {r}"))
        .to_owned();
    // Sent and billed on the sub account, not on the master.
    assert!(credit(&app, &sub).await < sub_before);
    assert_eq!(credit(&app, &master).await, master_before);
    assert!(rpc(&app, &sub, "sms.get", json!([hash])).await["result"].is_object());
    assert_eq!(
        rpc(&app, &master, "sms.get", json!([hash])).await["error"]["code"],
        115
    );
    // By login too, and the account itself.
    let by_login = format!("user.login {}", sub.login);
    let r = rpc_as(&app, &master, &by_login, "sms.get", json!([hash])).await;
    assert_eq!(r["result"]["hash"], hash.as_str(), "{r}");
    let myself = format!("account.hash {}", master.sid);
    let r = rpc_as(&app, &master, &myself, "system.get_timestamp", json!([])).await;
    assert!(r["result"].is_i64(), "{r}");
    // Never ignored: another main account, a parent from its sub account, an unknown
    // account, and a malformed value are refused, and nothing is sent.
    let refused = [
        (&master, format!("account.hash {}", stranger.sid), 100),
        (&master, format!("user.login {}", stranger.login), 100),
        (&sub, format!("account.hash {}", master.sid), 100),
        (&master, "account.hash zzzzzzzz".to_owned(), 100),
        (&master, "user.login nobody-at-all".to_owned(), 100),
        (&master, "session.token abc".to_owned(), 151),
        (&master, "account.hash".to_owned(), 151),
    ];
    let stranger_before = credit(&app, &stranger).await;
    for (who, value, code) in &refused {
        let r = rpc_as(
            &app,
            who,
            value,
            "sms.send",
            json!(["SMS", "+33612345678", "no", null]),
        )
        .await;
        assert_eq!(r["error"]["code"], *code, "{value}: {r}");
        assert!(
            r["error"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("SVC-Login-As")),
            "{r}"
        );
    }
    assert_eq!(credit(&app, &stranger).await, stranger_before);
    // Another brand's header (this server's brand is SVC) is refused, not ignored.
    let (_, r) = send(
        app.anon(Method::POST, "/json-rpc/v1.1/")
            .basic_auth(&master.login, Some(&master.password))
            .header("CALLR-Login-As", by_hash.as_str())
            .json(&json!({"jsonrpc": "2.0", "id": 8, "method": "sms.send", "params": ["SMS", "+33612345678", "no", null]})),
    )
    .await;
    assert_eq!(r["error"]["code"], 151, "{r}");
    assert!(
        r["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("SVC-Login-As")),
        "{r}"
    );
    let sent = rpc(
        &app,
        &master,
        "sms.get_list",
        json!(["OUT", "2000-01-01 00:00:00", "2100-01-01 00:00:00"]),
    )
    .await;
    assert_eq!(sent["result"].as_array().map(Vec::len), Some(0), "{sent}");
    // SMS REST v1.1 honours it the same way.
    let (status, body) = send(
        app.anon(Method::GET, &format!("/rest/v1.1/sms/{hash}"))
            .basic_auth(&master.login, Some(&master.password))
            .header("SVC-Login-As", by_hash.as_str()),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = send(
        app.anon(Method::GET, &format!("/rest/v1.1/sms/{hash}"))
            .basic_auth(&master.login, Some(&master.password))
            .header("SVC-Login-As", format!("account.hash {}", stranger.sid)),
    )
    .await;
    assert_eq!(status, 403, "{body}");
    assert_eq!(body["status"], "error");
}

async fn every_v2_operation_refuses_unknown_query_parameters(app: TestApp) {
    let acct = app.account().await;
    let (_, doc) = send(app.anon(Method::GET, "/v2.0/openapi.json")).await;
    let paths = doc["paths"].as_object().expect("paths");
    let mut checked = 0;
    for (path, item) in paths {
        for method in ["get", "post", "put", "patch", "delete"] {
            if item.get(method).is_none() {
                continue;
            }
            let concrete = path
                .split('/')
                .map(|s| if s.starts_with('{') { "abcdefgh" } else { s })
                .collect::<Vec<_>>()
                .join("/");
            let m = Method::from_bytes(method.to_ascii_uppercase().as_bytes()).expect("method");
            let (status, body) = send(app.req(&acct, m, &format!("/v2.0{concrete}?bogus=1"))).await;
            assert_eq!(status, 400, "{method} {path}: {body}");
            assert_eq!(
                body["details"][0]["param"], "bogus",
                "{method} {path}: {body}"
            );
            checked += 1;
        }
    }
    assert!(checked > 50, "every operation of the document: {checked}");
    let (status, body) = send(app.req(&acct, Method::GET, "/v2.0/ping")).await;
    assert_eq!(status, 200, "{body}");
}
