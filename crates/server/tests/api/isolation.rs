//! No cross-account access: a second account's key gets 404 on every v2.0 path that takes a
//! sid, number, token, task id, run id or call id (and on the sandbox's call paths), and the
//! first account's resources are untouched afterwards. The matrix is checked against the
//! OpenAPI document, so a new path with an id cannot be forgotten here.

use std::collections::BTreeSet;

use reqwest::Method;
use serde_json::{Value, json};

use crate::actions::scenario;
use crate::audio_files::multipart;
use crate::both_backends;
use crate::helpers::{TestAccount, TestApp, assert_error, send};
use crate::sms::buy;

both_backends!(another_account_gets_404_on_every_path_with_an_id);

const SCRIPT: &str = "branches:\n  inbound-call:\n    actions:\n      - action: startRecording@v1\n      - action: gather@v2\n        params: {maxDigits: 1, timeout: 60}\n  api-initiated:\n    actions:\n      - action: log@v1\n        params: {message: hi}\n";

async fn created(
    app: &TestApp,
    acct: &TestAccount,
    method: Method,
    path: &str,
    body: Value,
) -> Value {
    let (status, v) = send(app.req(acct, method, path).json(&body)).await;
    assert!(status.is_success(), "{path}: {status} {v}");
    v
}

async fn another_account_gets_404_on_every_path_with_an_id(app: TestApp) {
    let a = app.account().await;
    let b = app.account().await;
    // Everything account A can own.
    let number = buy(&app, &a, "country=GB&type=mobile").await;
    let theirs = buy(&app, &b, "country=GB&type=mobile").await;
    let sid = scenario(&app, &a, SCRIPT).await;
    let b_scenario = scenario(&app, &b, SCRIPT).await;
    send(app.req(
        &a,
        Method::PUT,
        &format!("/v2.0/actions/{sid}/numbers/{number}"),
    ))
    .await;
    let place = |from: &'static str| {
        app.req(&a, Method::POST, "/sandbox/calls")
            .json(&json!({"from": from, "to": number}))
    };
    let (_, first) = send(place("+447700900901")).await;
    let ended = first["callid"].as_str().unwrap().to_owned();
    send(app.req(&a, Method::DELETE, &format!("/v2.0/calls/{ended}"))).await;
    let (_, live) = send(place("+447700900902")).await;
    let callid = live["callid"].as_str().unwrap().to_owned();
    let (_, recs) = send(app.req(&a, Method::GET, "/v2.0/recordings")).await;
    let rec = recs["hits"][0]["sid"]
        .as_str()
        .expect("a recording")
        .to_owned();
    let end_user = created(
        &app,
        &a,
        Method::POST,
        "/v2.0/end-users",
        json!({"name": "Ada"}),
    )
    .await["sid"]
        .as_str()
        .unwrap()
        .to_owned();
    let b_end_user = created(
        &app,
        &b,
        Method::POST,
        "/v2.0/end-users",
        json!({"name": "Bob"}),
    )
    .await["sid"]
        .as_str()
        .unwrap()
        .to_owned();
    let sms = created(
        &app,
        &a,
        Method::POST,
        "/v2.0/sms?to=%2B33612345678",
        json!({"body": "hi"}),
    )
    .await["sid"]
        .as_str()
        .unwrap()
        .to_owned();
    let hook = created(
        &app,
        &a,
        Method::POST,
        "/v2.0/webhooks?type=sms.mo",
        json!({"endpoint": "http://127.0.0.1:9/hook"}),
    )
    .await["sid"]
        .as_str()
        .unwrap()
        .to_owned();
    let token = created(
        &app,
        &a,
        Method::POST,
        "/v2.0/numbers/store?country=GB&type=mobile",
        json!(null),
    )
    .await["token"]
        .as_str()
        .unwrap()
        .to_owned();
    let audio = created(
        &app,
        &a,
        Method::POST,
        "/v2.0/audio-files",
        json!({"name": "hello"}),
    )
    .await["sid"]
        .as_str()
        .unwrap()
        .to_owned();
    let task = created(
        &app,
        &a,
        Method::POST,
        "/v2.0/calls/export?direction=inbound&from=2025-06-01T00:00:00Z&to=2025-06-02T00:00:00Z",
        json!(null),
    )
    .await["taskid"]
        .as_str()
        .unwrap()
        .to_owned();
    let run = created(
        &app,
        &a,
        Method::POST,
        &format!("/v2.0/actions/{sid}/runs"),
        json!({}),
    )
    .await["runId"]
        .as_str()
        .map(str::to_owned)
        .unwrap_or_else(|| panic!("a run id"));
    let n = number.replace('+', "%2B");
    let tn = theirs.replace('+', "%2B");

    // (template, method, concrete path, body) for account B.
    let matrix: Vec<(&str, Method, String, Value)> = vec![
        (
            "/actions/{sid}",
            Method::GET,
            format!("/v2.0/actions/{sid}"),
            Value::Null,
        ),
        (
            "/actions/{sid}",
            Method::PATCH,
            format!("/v2.0/actions/{sid}"),
            json!({"name": "mine"}),
        ),
        (
            "/actions/{sid}",
            Method::DELETE,
            format!("/v2.0/actions/{sid}"),
            Value::Null,
        ),
        (
            "/actions/{sid}/numbers/{number}",
            Method::PUT,
            format!("/v2.0/actions/{sid}/numbers/{tn}"),
            Value::Null,
        ),
        (
            "/actions/{sid}/numbers/{number}",
            Method::PUT,
            format!("/v2.0/actions/{b_scenario}/numbers/{n}"),
            Value::Null,
        ),
        (
            "/actions/{sid}/numbers/{number}",
            Method::DELETE,
            format!("/v2.0/actions/{sid}/numbers/{n}"),
            Value::Null,
        ),
        (
            "/actions/{sid}/numbers/{number}",
            Method::DELETE,
            format!("/v2.0/actions/{b_scenario}/numbers/{n}"),
            Value::Null,
        ),
        (
            "/actions/{sid}/runs",
            Method::POST,
            format!("/v2.0/actions/{sid}/runs"),
            json!({}),
        ),
        (
            "/actions/{sid}/runs/{runid}",
            Method::GET,
            format!("/v2.0/actions/{sid}/runs/{run}"),
            Value::Null,
        ),
        (
            "/actions/{sid}/runs/{runid}",
            Method::GET,
            format!("/v2.0/actions/{b_scenario}/runs/{run}"),
            Value::Null,
        ),
        (
            "/actions/{sid}/runs/{runid}",
            Method::DELETE,
            format!("/v2.0/actions/{sid}/runs/{run}"),
            Value::Null,
        ),
        (
            "/audio-files/{sid}",
            Method::GET,
            format!("/v2.0/audio-files/{audio}"),
            Value::Null,
        ),
        (
            "/audio-files/{sid}",
            Method::PATCH,
            format!("/v2.0/audio-files/{audio}"),
            json!({"name": "mine"}),
        ),
        (
            "/audio-files/{sid}",
            Method::DELETE,
            format!("/v2.0/audio-files/{audio}"),
            Value::Null,
        ),
        (
            "/audio-files/{sid}/file",
            Method::GET,
            format!("/v2.0/audio-files/{audio}/file"),
            Value::Null,
        ),
        (
            "/audio-files/{sid}/file",
            Method::PUT,
            format!("/v2.0/audio-files/{audio}/file"),
            Value::Null,
        ),
        (
            "/audio-files/{sid}/tts",
            Method::PUT,
            format!("/v2.0/audio-files/{audio}/tts"),
            json!({"text": "mine now"}),
        ),
        (
            "/audio-files/{sid}/phone-id",
            Method::PUT,
            format!("/v2.0/audio-files/{audio}/phone-id?country=GB"),
            Value::Null,
        ),
        (
            "/calls/{callid}",
            Method::DELETE,
            format!("/v2.0/calls/{callid}"),
            Value::Null,
        ),
        (
            "/end-users/{sid}",
            Method::GET,
            format!("/v2.0/end-users/{end_user}"),
            Value::Null,
        ),
        (
            "/end-users/{sid}",
            Method::PATCH,
            format!("/v2.0/end-users/{end_user}"),
            json!({"name": "mine"}),
        ),
        (
            "/end-users/{sid}",
            Method::DELETE,
            format!("/v2.0/end-users/{end_user}"),
            Value::Null,
        ),
        (
            "/numbers/store/{token}",
            Method::GET,
            format!("/v2.0/numbers/store/{token}"),
            Value::Null,
        ),
        (
            "/numbers/store/{token}",
            Method::POST,
            format!("/v2.0/numbers/store/{token}"),
            Value::Null,
        ),
        (
            "/numbers/store/{token}",
            Method::DELETE,
            format!("/v2.0/numbers/store/{token}"),
            Value::Null,
        ),
        (
            "/numbers/{number}",
            Method::GET,
            format!("/v2.0/numbers/{n}"),
            Value::Null,
        ),
        (
            "/numbers/{number}",
            Method::PATCH,
            format!("/v2.0/numbers/{n}"),
            json!({"scenario": null}),
        ),
        (
            "/numbers/{number}",
            Method::DELETE,
            format!("/v2.0/numbers/{n}"),
            Value::Null,
        ),
        (
            "/numbers/{number}/enduser/{sid}",
            Method::PUT,
            format!("/v2.0/numbers/{n}/enduser/{b_end_user}"),
            Value::Null,
        ),
        (
            "/numbers/{number}/enduser/{sid}",
            Method::PUT,
            format!("/v2.0/numbers/{tn}/enduser/{end_user}"),
            Value::Null,
        ),
        (
            "/numbers/{number}/scenario",
            Method::DELETE,
            format!("/v2.0/numbers/{n}/scenario"),
            Value::Null,
        ),
        (
            "/numbers/{number}/scenario/{sid}",
            Method::PUT,
            format!("/v2.0/numbers/{n}/scenario/{b_scenario}"),
            Value::Null,
        ),
        (
            "/numbers/{number}/scenario/{sid}",
            Method::PUT,
            format!("/v2.0/numbers/{tn}/scenario/{sid}"),
            Value::Null,
        ),
        (
            "/recordings/{sid}",
            Method::GET,
            format!("/v2.0/recordings/{rec}"),
            Value::Null,
        ),
        (
            "/recordings/{sid}",
            Method::PATCH,
            format!("/v2.0/recordings/{rec}"),
            json!({"read": true}),
        ),
        (
            "/recordings/{sid}",
            Method::DELETE,
            format!("/v2.0/recordings/{rec}"),
            Value::Null,
        ),
        (
            "/recordings/{sid}/file",
            Method::GET,
            format!("/v2.0/recordings/{rec}/file"),
            Value::Null,
        ),
        (
            "/sms/{sid}",
            Method::GET,
            format!("/v2.0/sms/{sms}"),
            Value::Null,
        ),
        (
            "/tasks/{taskid}",
            Method::GET,
            format!("/v2.0/tasks/{task}"),
            Value::Null,
        ),
        (
            "/tasks/{taskid}",
            Method::DELETE,
            format!("/v2.0/tasks/{task}"),
            Value::Null,
        ),
        (
            "/webhooks/{sid}",
            Method::GET,
            format!("/v2.0/webhooks/{hook}"),
            Value::Null,
        ),
        (
            "/webhooks/{sid}",
            Method::PATCH,
            format!("/v2.0/webhooks/{hook}"),
            json!({"status": "disabled"}),
        ),
        (
            "/webhooks/{sid}",
            Method::DELETE,
            format!("/v2.0/webhooks/{hook}"),
            Value::Null,
        ),
        (
            "/webhooks/{sid}/deliveries",
            Method::GET,
            format!("/v2.0/webhooks/{hook}/deliveries"),
            Value::Null,
        ),
        (
            "sandbox",
            Method::GET,
            format!("/sandbox/calls/{callid}"),
            Value::Null,
        ),
        (
            "sandbox",
            Method::POST,
            format!("/sandbox/calls/{callid}/dtmf"),
            json!({"digits": "1"}),
        ),
        (
            "sandbox",
            Method::POST,
            format!("/sandbox/calls/{callid}/hangup"),
            Value::Null,
        ),
        (
            "sandbox",
            Method::POST,
            format!("/sandbox/calls/{callid}/audio"),
            Value::Null,
        ),
    ];

    // Every v2.0 operation whose path has an id is in the matrix.
    let (_, doc) = send(app.anon(Method::GET, "/v2.0/openapi.json")).await;
    let covered: BTreeSet<(String, String)> = matrix
        .iter()
        .map(|(t, m, _, _)| ((*t).to_owned(), m.as_str().to_ascii_lowercase()))
        .collect();
    for (path, ops) in doc["paths"].as_object().unwrap() {
        if !path.contains('{') || path.starts_with("/downloads/") {
            continue; // downloads need no credentials: the signature is the key (tasks tests)
        }
        for method in ops.as_object().unwrap().keys() {
            if ["get", "post", "put", "patch", "delete"].contains(&method.as_str()) {
                assert!(
                    covered.contains(&(path.clone(), method.clone())),
                    "{method} {path} is missing from the cross-account matrix"
                );
            }
        }
    }

    for (template, method, path, body) in &matrix {
        let mut req = app.req(&b, method.clone(), path);
        req = if path.ends_with("/file") && *method == Method::PUT {
            let (ct, bytes) = multipart(&[("file", Some("audio/wav"), b"RIFF")]);
            req.header("content-type", ct).body(bytes)
        } else if path.ends_with("/audio") {
            req.header("content-type", "audio/wav")
                .body(b"RIFF".to_vec())
        } else if body.is_null() {
            req
        } else {
            req.json(body)
        };
        let (status, answer) = send(req).await;
        assert_eq!(
            status, 404,
            "{method} {path} ({template}) as another account: {answer}"
        );
        assert_error(status, &answer, 404, "not_found");
    }

    // Account A's things are all still there, as they were.
    for path in [
        format!("/v2.0/actions/{sid}"),
        format!("/v2.0/actions/{sid}/runs/{run}"),
        format!("/v2.0/audio-files/{audio}"),
        format!("/v2.0/end-users/{end_user}"),
        format!("/v2.0/numbers/store/{token}"),
        format!("/v2.0/recordings/{rec}"),
        format!("/v2.0/sms/{sms}"),
        format!("/v2.0/tasks/{task}"),
        format!("/v2.0/webhooks/{hook}"),
    ] {
        let (status, v) = send(app.req(&a, Method::GET, &path)).await;
        assert_eq!(status, 200, "{path}: {v}");
    }
    let (_, owned) = send(app.req(&a, Method::GET, &format!("/v2.0/numbers/{n}"))).await;
    assert_eq!(owned["scenario"]["sid"], sid.as_str(), "{owned}");
    let (_, hookv) = send(app.req(&a, Method::GET, &format!("/v2.0/webhooks/{hook}"))).await;
    assert_eq!(hookv["status"], "enabled");
    let (_, recv) = send(app.req(&a, Method::GET, &format!("/v2.0/recordings/{rec}"))).await;
    assert_eq!(recv["read"], false);
    let (_, call) = send(app.req(&a, Method::GET, &format!("/sandbox/calls/{callid}"))).await;
    assert_eq!(
        call["status"], "answered",
        "the live call is still up: {call}"
    );
    let (_, reservation) =
        send(app.req(&a, Method::GET, &format!("/v2.0/numbers/store/{token}"))).await;
    assert_eq!(reservation["status"], "reserved");
}
