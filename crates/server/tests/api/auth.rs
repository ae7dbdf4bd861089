//! The authentication matrix of CONTRACT section 1.

use base64::Engine;
use reqwest::Method;
use serde_json::json;

use crate::both_backends;
use crate::helpers::{ADMIN_TOKEN, TestAccount, TestApp, assert_error, send};

fn basic(user: &str, secret: &str) -> String {
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("{user}:{secret}"))
    )
}

both_backends!(
    missing_malformed_and_wrong_credentials_are_401,
    api_key_and_basic_act_on_the_right_account,
    revoked_keys_stop_working,
    changes_on_another_node_apply_from_the_next_request,
    balances_are_current_through_a_known_key,
    sub_accounts_are_reached_only_through_their_parent,
    legacy_interfaces_accept_login_password_and_api_key_header,
);

async fn missing_malformed_and_wrong_credentials_are_401(app: TestApp) {
    let acct = app.account().await;
    let cases = [
        app.anon(Method::GET, "/v2.0/ping"),
        app.anon(Method::GET, "/v2.0/ping")
            .header("x-api-key", "dt_wrong"),
        app.anon(Method::GET, "/v2.0/ping").header("x-api-key", ""),
        app.anon(Method::GET, "/v2.0/ping")
            .header("authorization", "Bearer xyz"),
        app.anon(Method::GET, "/v2.0/ping")
            .header("authorization", "Basic !!!notbase64"),
        app.anon(Method::GET, "/v2.0/ping")
            .header("authorization", basic(&acct.sid, "dt_wrong")),
        app.anon(Method::GET, "/v2.0/ping")
            .header("authorization", basic("nosuchid", &acct.api_key)),
        // The legacy login and password are not v2.0 credentials.
        app.anon(Method::GET, "/v2.0/ping")
            .header("authorization", basic(&acct.login, &acct.password)),
        app.anon(Method::GET, "/v2.0/end-users"),
        app.anon(Method::POST, "/v2.0/end-users")
            .json(&json!({"name": "x"})),
        app.anon(Method::GET, "/v2.0/billing/credit"),
    ];
    for req in cases {
        let (status, body) = send(req).await;
        assert_error(status, &body, 401, "auth_error");
    }
    // Nothing was created by the refused POST.
    let (_, list) = send(app.req(&acct, Method::GET, "/v2.0/end-users")).await;
    assert_eq!(list["total"], 0);
}

async fn api_key_and_basic_act_on_the_right_account(app: TestApp) {
    let acct = app
        .account_with(json!({"name": "a", "credit": "123.45"}))
        .await;
    let (status, body) = send(app.req(&acct, Method::GET, "/v2.0/billing/credit")).await;
    assert_eq!(status, 200);
    assert_eq!(body, json!({"amount": "123.45", "currency": "EUR"}));
    let (status, body) = send(
        app.anon(Method::GET, "/v2.0/billing/credit")
            .header("authorization", basic(&acct.sid, &acct.api_key)),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(body["amount"], "123.45");
    let (status, body) = send(app.req(&acct, Method::GET, "/v2.0/ping")).await;
    assert_eq!(status, 200);
    assert_eq!(body["pong"], "pong");
    assert_eq!(body["time"], "2025-06-01T12:00:00.000Z");
}

async fn revoked_keys_stop_working(app: TestApp) {
    let acct = app.account().await;
    // Used before it is revoked, so this node knows the key (and sends with it without a
    // read of its own).
    let (status, _) = send(app.req(&acct, Method::GET, "/v2.0/ping")).await;
    assert_eq!(status, 200);
    let (status, body) = send(
        app.req(&acct, Method::POST, "/v2.0/sms?to=%2B33612345678")
            .json(&json!({"body": "before the change"})),
    )
    .await;
    assert_eq!(status, 202, "{body}");
    let (status, second) = send(app.admin(
        Method::POST,
        &format!("/admin/accounts/{}/api-keys", acct.sid),
    ))
    .await;
    assert_eq!(status, 201);
    let second_key = second["apiKey"].as_str().unwrap().to_owned();
    assert!(second_key.starts_with("dt_") && second_key.len() >= 30);
    let key_id = &acct.api_key[..11];
    let (status, _) = send(app.admin(
        Method::DELETE,
        &format!("/admin/accounts/{}/api-keys/{key_id}", acct.sid),
    ))
    .await;
    assert_eq!(status, 204);
    assert_key_refused_by_v2(&app, &acct).await;
    // The other key still works, and the refused send stored nothing; revoking twice is
    // 404.
    let (status, _) = send(
        app.anon(Method::GET, "/v2.0/ping")
            .header("x-api-key", &second_key),
    )
    .await;
    assert_eq!(status, 200);
    let (status, body) = send(
        app.anon(
            Method::GET,
            "/v2.0/sms?direction=outbound&createdAfter=2000-01-01T00:00:00Z&createdBefore=2100-01-01T00:00:00Z",
        )
            .header("x-api-key", &second_key),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["total"], 1, "{body}");
    let (status, body) = send(app.admin(
        Method::DELETE,
        &format!("/admin/accounts/{}/api-keys/{key_id}", acct.sid),
    ))
    .await;
    assert_error(status, &body, 404, "not_found");
}

/// The account's first key is refused by v2.0, as `x-api-key` and in Basic `SID:KEY`.
async fn assert_key_refused_by_v2(app: &TestApp, acct: &TestAccount) {
    // A send takes a key this node knows without reading it first: its write finds the
    // change and the send is authenticated again, so it is refused all the same.
    let (status, body) = send(
        app.req(acct, Method::POST, "/v2.0/sms?to=%2B33612345678")
            .json(&json!({"body": "after the change"})),
    )
    .await;
    assert_error(status, &body, 401, "auth_error");
    let (status, body) = send(app.req(acct, Method::GET, "/v2.0/ping")).await;
    assert_error(status, &body, 401, "auth_error");
    let (status, body) = send(
        app.anon(Method::GET, "/v2.0/ping")
            .header("authorization", basic(&acct.sid, &acct.api_key)),
    )
    .await;
    assert_error(status, &body, 401, "auth_error");
}

async fn sub_accounts_are_reached_only_through_their_parent(app: TestApp) {
    let main = app
        .account_with(json!({"name": "main", "credit": "1000.00"}))
        .await;
    let sub = app.sub_account(&main, "7.00").await;
    let sibling = app.sub_account(&main, "9.00").await;
    let stranger = app
        .account_with(json!({"name": "other", "credit": "1.00"}))
        .await;

    // Basic SUBSID:MASTERKEY acts on the sub account.
    let as_sub = |who: &str, key: &str| {
        app.anon(Method::GET, "/v2.0/billing/credit")
            .header("authorization", basic(who, key))
    };
    let (status, body) = send(as_sub(&sub.sid, &main.api_key)).await;
    assert_eq!(status, 200);
    assert_eq!(body["amount"], "7.00");
    // The sub account's own key acts on itself.
    let (_, body) = send(app.req(&sub, Method::GET, "/v2.0/billing/credit")).await;
    assert_eq!(body["amount"], "7.00");
    // A sibling's SID with a sub account's key, a stranger's SID with the master key, and
    // the parent's SID with a sub account's key are all refused.
    for (who, key) in [
        (&sibling.sid, &sub.api_key),
        (&stranger.sid, &main.api_key),
        (&main.sid, &sub.api_key),
    ] {
        let (status, body) = send(as_sub(who, key)).await;
        assert_error(status, &body, 401, "auth_error");
    }

    // A sub account's data is invisible to its sibling and to its parent's own key.
    let (status, created) = send(
        app.anon(Method::POST, "/v2.0/end-users")
            .header("authorization", basic(&sub.sid, &main.api_key))
            .json(&json!({"name": "Alice"})),
    )
    .await;
    assert_eq!(status, 201);
    let path = format!("/v2.0/end-users/{}", created["sid"].as_str().unwrap());
    let (status, _) = send(app.req(&sub, Method::GET, &path)).await;
    assert_eq!(status, 200);
    for other in [&sibling, &main, &stranger] {
        let (status, body) = send(app.req(other, Method::GET, &path)).await;
        assert_error(status, &body, 404, "not_found");
        let (_, list) = send(app.req(other, Method::GET, "/v2.0/end-users")).await;
        assert_eq!(list["total"], 0, "{list}");
    }
}

async fn legacy_interfaces_accept_login_password_and_api_key_header(app: TestApp) {
    let acct = app.account().await;
    let rpc = json!({"jsonrpc": "2.0", "id": 7, "method": "system.get_timestamp", "params": []});
    let ok = [
        basic(&acct.login, &acct.password),
        format!("Api-Key {}", acct.api_key),
    ];
    for auth in ok {
        let (status, body) = send(
            app.anon(Method::POST, "/json-rpc/v1.1/")
                .header("authorization", auth)
                .json(&rpc),
        )
        .await;
        assert_eq!(status, 200);
        assert_eq!(body["result"], 1_748_779_200, "{body}");
        assert_eq!(body["id"], 7);
    }
    let bad = [
        basic(&acct.login, "wrong"),
        basic("nobody", &acct.password),
        format!("Api-Key {}x", acct.api_key),
        "Basic".to_owned(),
    ];
    for auth in bad {
        let (status, body) = send(
            app.anon(Method::POST, "/json-rpc/v1.1/")
                .header("authorization", auth)
                .json(&rpc),
        )
        .await;
        assert_eq!(status, 200, "JSON-RPC answers 200 even for errors");
        assert_eq!(body["error"]["code"], 22, "{body}");
    }
    let (status, body) = send(app.anon(Method::POST, "/json-rpc/v1.1/").json(&rpc)).await;
    assert_eq!(status, 200);
    assert_eq!(body["error"]["code"], 22);
}

/// Authentication keeps the accounts behind keys in memory; a change made by another node
/// (another process on the same database) must still hold from this node's next request.
async fn changes_on_another_node_apply_from_the_next_request(app: TestApp) {
    let acct = app.account().await;
    let sms = |acct: &TestAccount| {
        app.req(acct, Method::POST, "/v2.0/sms?to=%2B33612345678")
            .json(&json!({"body": "hello"}))
    };
    let (status, body) = send(sms(&acct)).await;
    assert_eq!(status, 202, "{body}");
    // A scenario this node keeps, as it keeps the key: runs start without reading either.
    let scenario = crate::actions::scenario(
        &app,
        &acct,
        "branches:\n  api-initiated:\n    actions:\n      - action: log@v1\n        params: { message: hi }\n",
    )
    .await;
    let run = |acct: &TestAccount| {
        app.req(
            acct,
            Method::POST,
            &format!("/v2.0/actions/{scenario}/runs"),
        )
    };
    let (status, body) = send(run(&acct)).await;
    assert_eq!(status, 202, "{body}");
    let (other, _node) = app.second_node().await;
    let admin = |method: Method, path: &str| {
        app.client
            .request(method, format!("{other}{path}"))
            .bearer_auth(ADMIN_TOKEN)
    };

    // Suspended there: refused here.
    let path = format!("/admin/accounts/{}", acct.sid);
    let (status, body) =
        send(admin(Method::PATCH, &path).json(&json!({"status": "suspended"}))).await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = send(sms(&acct)).await;
    assert_error(status, &body, 403, "account_suspended");
    // Active again there, used here (each refusal above read the account again, so it is
    // cached active again here), suspended there once more: a run is refused here too.
    let (status, body) = send(admin(Method::PATCH, &path).json(&json!({"status": "active"}))).await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = send(run(&acct)).await;
    assert_eq!(status, 202, "{body}");
    let (status, body) =
        send(admin(Method::PATCH, &path).json(&json!({"status": "suspended"}))).await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = send(run(&acct)).await;
    assert_error(status, &body, 403, "account_suspended");
    let (status, body) = send(admin(Method::PATCH, &path).json(&json!({"status": "active"}))).await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = send(sms(&acct)).await;
    assert_eq!(status, 202, "{body}");

    // A new key made there works here; the old key revoked there is refused here, by
    // every interface that takes a key.
    let (status, made) = send(admin(
        Method::POST,
        &format!("/admin/accounts/{}/api-keys", acct.sid),
    ))
    .await;
    assert_eq!(status, 201, "{made}");
    let new_key = made["apiKey"].as_str().expect("apiKey").to_owned();
    let (status, _) = send(
        app.anon(Method::GET, "/v2.0/ping")
            .header("x-api-key", &new_key),
    )
    .await;
    assert_eq!(status, 200);
    // The old key used once more here, so this node holds it at the current version.
    let (status, _) = send(app.req(&acct, Method::GET, "/v2.0/ping")).await;
    assert_eq!(status, 200);
    let key_id = &acct.api_key[..11];
    let (status, _) = send(admin(
        Method::DELETE,
        &format!("/admin/accounts/{}/api-keys/{key_id}", acct.sid),
    ))
    .await;
    assert_eq!(status, 204);
    // A run of no scenario first: the key is taken as cached, and the 404 it would have
    // earned is not answered to a revoked key. Then a run: the normal path refuses it.
    let (status, body) = send(app.req(&acct, Method::POST, "/v2.0/actions/zzzzzzzz/runs")).await;
    assert_error(status, &body, 401, "auth_error");
    let (status, body) = send(run(&acct)).await;
    assert_error(status, &body, 401, "auth_error");
    assert_key_refused_by_v2(&app, &acct).await;
    let (status, body) = send(
        app.anon(Method::POST, "/json-rpc/v1.1/")
            .header("authorization", format!("Api-Key {}", acct.api_key))
            .json(
                &json!({"jsonrpc": "2.0", "id": 1, "method": "system.get_timestamp", "params": []}),
            ),
    )
    .await;
    assert_eq!(status, 200, "JSON-RPC answers 200 even for errors");
    assert_eq!(body["error"]["code"], 22, "{body}");
    let (status, _) = send(
        app.anon(Method::GET, "/v2.0/ping")
            .header("x-api-key", &new_key),
    )
    .await;
    assert_eq!(status, 200);
}

/// The account behind a key is kept between requests, its balance is not: every interface
/// shows the balance after the last debit.
async fn balances_are_current_through_a_known_key(app: TestApp) {
    let acct = app
        .account_with(json!({"name": "a", "credit": "10.00"}))
        .await;
    let rpc_credit = || async {
        let (status, body) = send(
            app.anon(Method::POST, "/json-rpc/v1.1/")
                .header("authorization", format!("Api-Key {}", acct.api_key))
                .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "billing.get_prepaid_credit", "params": []})),
        )
        .await;
        assert_eq!(status, 200, "{body}");
        body["result"]["amount"].clone()
    };
    let v2_credit = || async {
        let (status, body) = send(app.req(&acct, Method::GET, "/v2.0/billing/credit")).await;
        assert_eq!(status, 200, "{body}");
        body["amount"].clone()
    };
    assert_eq!(v2_credit().await, "10.00");
    assert_eq!(rpc_credit().await, "10.00");
    let (status, body) = send(
        app.req(&acct, Method::POST, "/v2.0/sms?to=%2B33612345678")
            .json(&json!({"body": "short"})),
    )
    .await;
    assert_eq!(status, 202, "{body}");
    assert_eq!(v2_credit().await, "4.50");
    assert_eq!(rpc_credit().await, "4.50");
}
