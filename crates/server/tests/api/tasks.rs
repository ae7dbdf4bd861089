//! Tasks and the calls export: limits, the CSV against the calls made, the signed URL.

use reqwest::Method;
use serde_json::json;

use crate::both_backends;
use crate::helpers::{TestApp, assert_error, send};
use crate::sms::buy;

both_backends!(
    an_export_lists_the_calls_made_behind_a_signed_url,
    export_limits_and_task_cancel
);

const RANGE: &str = "from=2025-06-01T00:00:00Z&to=2025-06-02T00:00:00Z";

async fn an_export_lists_the_calls_made_behind_a_signed_url(app: TestApp) {
    let acct = app.account().await;
    let number = buy(&app, &acct, "country=GB&type=mobile").await;
    let (_, s) = send(app.req(&acct, Method::POST, "/v2.0/actions").json(&json!({"name": "x", "script": "branches:\n  inbound-call:\n    actions:\n      - action: say@v2\n        params: {what: hi}\n"}))).await;
    let sid = s["sid"].as_str().unwrap();
    send(app.req(
        &acct,
        Method::PUT,
        &format!("/v2.0/actions/{sid}/numbers/{number}"),
    ))
    .await;
    let mut callids = Vec::new();
    for from in ["+447700900901", "+447700900902", "+447700900903"] {
        let (_, call) = send(
            app.req(&acct, Method::POST, "/sandbox/calls")
                .json(&json!({"from": from, "to": number})),
        )
        .await;
        assert_eq!(call["status"], "ended", "{call}");
        callids.push(call["callid"].as_str().unwrap().to_owned());
    }
    let (status, t) = send(app.req(
        &acct,
        Method::POST,
        &format!(
            "/v2.0/calls/export?direction=inbound&{RANGE}&scenario={sid}&number=%2B{}",
            &number[1..]
        ),
    ))
    .await;
    assert_eq!(status, 202, "{t}");
    let taskid = t["taskid"].as_str().unwrap().to_owned();
    let (_, pending) = send(app.req(&acct, Method::GET, &format!("/v2.0/tasks/{taskid}"))).await;
    assert_eq!(pending["status"], "PENDING");
    app.tick().await;
    let (_, done) = send(app.req(&acct, Method::GET, &format!("/v2.0/tasks/{taskid}"))).await;
    assert_eq!(done["status"], "DONE", "{done}");
    assert_eq!(done["result"]["rows"], 3);
    let statuses: Vec<String> = app
        .events(&acct.sid, "job.status_update")
        .await
        .iter()
        .map(|e| e["status"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(statuses, ["RUNNING", "DONE"]);
    let url = done["result"]["downloadUrl"].as_str().unwrap().to_owned();
    let csv = reqwest::get(&url).await.unwrap();
    assert_eq!(csv.status(), 200);
    let text = csv.text().await.unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[0],
        "callid,direction,from,to,number,scenario,started,answered,ended,durationTotal,durationAnswered,durationBilled,hangupCause,hangupSource,billingDebit"
    );
    assert_eq!(lines.len(), 4, "{text}");
    for (line, callid) in lines[1..].iter().zip(&callids) {
        let cols: Vec<&str> = line.split(',').collect();
        assert_eq!(cols[0], callid);
        assert_eq!(cols[1], "inbound");
        assert_eq!(cols[3], number);
        assert_eq!(cols[5], sid);
        assert_eq!(cols[12], "16");
    }
    // Forged or extended links answer 404; the real one stops after 24 hours.
    let forged = url.replace("signature=", "signature=00");
    assert_eq!(reqwest::get(&forged).await.unwrap().status(), 404);
    let expires: i64 = url
        .split("expires=")
        .nth(1)
        .unwrap()
        .split('&')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let extended = url.replace(
        &format!("expires={expires}"),
        &format!("expires={}", expires + 86_400_000),
    );
    assert_eq!(reqwest::get(&extended).await.unwrap().status(), 404);
    app.clock.advance_ms(24 * 3600 * 1000);
    assert_eq!(reqwest::get(&url).await.unwrap().status(), 404);
}

async fn export_limits_and_task_cancel(app: TestApp) {
    let acct = app.account().await;
    let other = app.account().await;
    let (status, body) = send(app.req(
        &acct,
        Method::POST,
        "/v2.0/calls/export?direction=inbound&from=2025-06-01T00:00:00Z&to=2025-07-03T00:00:00Z",
    ))
    .await;
    assert_error(status, &body, 400, "export_range_too_long");
    let (status, body) = send(app.req(
        &acct,
        Method::POST,
        "/v2.0/calls/export?direction=inbound&from=2025-06-02T00:00:00Z&to=2025-06-01T00:00:00Z",
    ))
    .await;
    assert_error(status, &body, 400, "validation_error");
    let (status, body) =
        send(app.req(&acct, Method::POST, "/v2.0/calls/export?direction=sideways")).await;
    assert_error(status, &body, 400, "validation_error");
    let (status, _) = send(app.req(
        &acct,
        Method::POST,
        &format!("/v2.0/calls/export?direction=inbound&{RANGE}&scenario=abcdefgh"),
    ))
    .await;
    assert_eq!(status, 404);
    let (status, _) = send(app.req(
        &acct,
        Method::POST,
        &format!("/v2.0/calls/export?direction=inbound&{RANGE}&number=%2B447700900321"),
    ))
    .await;
    assert_eq!(status, 404);
    let mut ids = Vec::new();
    for _ in 0..5 {
        let (status, t) = send(app.req(
            &acct,
            Method::POST,
            &format!("/v2.0/calls/export?direction=outbound&{RANGE}"),
        ))
        .await;
        assert_eq!(status, 202, "{t}");
        ids.push(t["taskid"].as_str().unwrap().to_owned());
    }
    let (status, body) = send(app.req(
        &acct,
        Method::POST,
        &format!("/v2.0/calls/export?direction=outbound&{RANGE}"),
    ))
    .await;
    assert_error(status, &body, 429, "export_quota_exceeded");
    // Cancel a PENDING task; a finished one is not cancellable; others see nothing.
    let (status, _) =
        send(app.req(&other, Method::DELETE, &format!("/v2.0/tasks/{}", ids[0]))).await;
    assert_eq!(status, 404);
    let (status, _) =
        send(app.req(&acct, Method::DELETE, &format!("/v2.0/tasks/{}", ids[0]))).await;
    assert_eq!(status, 204);
    let (_, t) = send(app.req(&acct, Method::GET, &format!("/v2.0/tasks/{}", ids[0]))).await;
    assert_eq!(t["status"], "CANCELED");
    let (status, body) =
        send(app.req(&acct, Method::DELETE, &format!("/v2.0/tasks/{}", ids[0]))).await;
    assert_error(status, &body, 400, "task_not_cancellable");
    app.tick().await;
    let (_, t) = send(app.req(&acct, Method::GET, &format!("/v2.0/tasks/{}", ids[1]))).await;
    assert_eq!(t["status"], "DONE", "{t}");
    assert_eq!(t["result"]["rows"], 0);
    // The next day the quota is fresh.
    app.clock.advance_ms(86_400_000);
    let (status, _) = send(app.req(
        &acct,
        Method::POST,
        &format!("/v2.0/calls/export?direction=outbound&{RANGE}"),
    ))
    .await;
    assert_eq!(status, 202);
}
