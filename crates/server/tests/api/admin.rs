//! The operator API of CONTRACT section 9.

use reqwest::Method;
use serde_json::json;

use crate::both_backends;
use crate::helpers::{ADMIN_TOKEN, Backend, TestApp, assert_error, send};

both_backends!(
    admin_accounts_and_keys,
    admin_validation,
    admin_needs_its_token
);

async fn admin_accounts_and_keys(app: TestApp) {
    let (status, made) = send(
        app.admin(Method::POST, "/admin/accounts")
            .json(&json!({"name": "acme", "credit": "250.5", "currency": "USD"})),
    )
    .await;
    assert_eq!(status, 201, "{made}");
    for field in [
        "sid", "name", "parent", "login", "password", "apiKey", "status", "currency", "credit",
    ] {
        assert!(made.get(field).is_some(), "{field} missing: {made}");
    }
    assert_eq!(made["credit"], "250.50");
    assert_eq!(made["currency"], "USD");
    assert_eq!(made["status"], "active");
    assert_eq!(made["parent"], serde_json::Value::Null);
    let sid = made["sid"].as_str().unwrap();
    let (status, sub) = send(
        app.admin(Method::POST, "/admin/accounts")
            .json(&json!({"name": "acme-sub", "parent": sid})),
    )
    .await;
    assert_eq!(status, 201);
    assert_eq!(sub["parent"], sid);
    assert_eq!(sub["currency"], "USD", "inherits the parent's currency");
    assert_eq!(sub["credit"], "0.00");
    let (status, list) = send(app.admin(Method::GET, "/admin/accounts")).await;
    assert_eq!(status, 200);
    let list = list.as_array().unwrap();
    assert_eq!(list.len(), 2);
    for a in list {
        assert!(
            a.get("password").is_none() && a.get("apiKey").is_none(),
            "secrets are shown once: {a}"
        );
    }
    // A sub account cannot have sub accounts.
    let (status, body) = send(
        app.admin(Method::POST, "/admin/accounts")
            .json(&json!({"name": "x", "parent": sub["sid"]})),
    )
    .await;
    assert_eq!(
        assert_error(status, &body, 400, "validation_error"),
        ["parent"]
    );
    // Keys of an unknown account.
    let (status, body) = send(app.admin(Method::POST, "/admin/accounts/zzzzzzzz/api-keys")).await;
    assert_error(status, &body, 404, "not_found");
}

async fn admin_validation(app: TestApp) {
    let cases = [
        (json!({}), "name"),
        (json!({"name": ""}), "name"),
        (json!({"name": "a", "credit": "ten"}), "credit"),
        (json!({"name": "a", "credit": "-5.00"}), "credit"),
        (json!({"name": "a", "currency": "euro"}), "currency"),
        (json!({"name": "a", "parent": "nosuch12"}), "parent"),
        (json!({"name": "a", "bogus": 1}), "bogus"),
    ];
    for (body, param) in cases {
        let (status, resp) = send(app.admin(Method::POST, "/admin/accounts").json(&body)).await;
        assert_eq!(
            assert_error(status, &resp, 400, "validation_error"),
            [param],
            "{body}"
        );
    }
    let (_, list) = send(app.admin(Method::GET, "/admin/accounts")).await;
    assert_eq!(
        list.as_array().unwrap().len(),
        0,
        "refused requests created nothing"
    );
}

async fn admin_needs_its_token(app: TestApp) {
    let (status, body) = send(app.anon(Method::GET, "/admin/accounts")).await;
    assert_error(status, &body, 401, "auth_error");
    let (status, body) = send(
        app.anon(Method::GET, "/admin/accounts")
            .bearer_auth(format!("{ADMIN_TOKEN}x")),
    )
    .await;
    assert_error(status, &body, 401, "auth_error");
    // Without a configured token the operator API does not exist.
    let backend = app.backend;
    drop(app);
    if backend == Backend::Sqlite {
        let bare = TestApp::spawn_with(Backend::Sqlite, |c| c.admin_token = None)
            .await
            .unwrap();
        let (status, body) = send(
            bare.anon(Method::GET, "/admin/accounts")
                .bearer_auth(ADMIN_TOKEN),
        )
        .await;
        assert_error(status, &body, 404, "not_found");
    }
}
