//! Slow clients: headers that never finish close the connection; a body that stalls is a
//! 400 in the contract's shape and changes nothing.

use std::time::Duration;

use reqwest::Method;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::both_backends;
use crate::helpers::{TestApp, send};

both_backends!(slow_clients_are_cut_off);

async fn connect(app: &TestApp) -> TcpStream {
    let url = app.url("");
    let addr = url.trim_start_matches("http://").trim_end_matches('/');
    TcpStream::connect(addr).await.expect("connect")
}

/// Everything the server writes until it closes the connection (bounded: the server must
/// act long before the bound).
async fn until_closed(stream: &mut TcpStream) -> String {
    let mut out = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut out)).await;
    assert!(read.is_ok(), "the server never closed the connection");
    String::from_utf8_lossy(&out).into_owned()
}

async fn slow_clients_are_cut_off(app: TestApp) {
    let app = TestApp::spawn_with(app.backend, |c| {
        c.header_timeout_ms = 300;
        c.body_timeout_ms = 300;
    })
    .await
    .expect("app");
    let acct = app.account().await;

    // Headers that never end: the connection is closed.
    let mut slow = connect(&app).await;
    slow.write_all(b"GET /v2.0/ping HTTP/1.1\r\nHost: dialtone\r\nx-api-key: ")
        .await
        .unwrap();
    let answer = until_closed(&mut slow).await;
    assert!(
        answer.is_empty() || answer.starts_with("HTTP/1.1 408"),
        "{answer}"
    );

    // A body that stalls: 400 validation_error, nothing created.
    let mut stalled = connect(&app).await;
    let head = format!(
        "POST /v2.0/end-users HTTP/1.1\r\nHost: dialtone\r\nx-api-key: {}\r\ncontent-type: application/json\r\ncontent-length: 100\r\nconnection: close\r\n\r\n{{\"name\": \"Ad",
        acct.api_key
    );
    stalled.write_all(head.as_bytes()).await.unwrap();
    let answer = until_closed(&mut stalled).await;
    assert!(answer.starts_with("HTTP/1.1 400"), "{answer}");
    assert!(answer.contains("\"validation_error\""), "{answer}");
    let (_, users) = send(app.req(&acct, Method::GET, "/v2.0/end-users")).await;
    assert_eq!(users["total"], 0, "{users}");

    // The server still answers everyone else.
    let (status, _) = send(app.req(&acct, Method::GET, "/v2.0/ping")).await;
    assert_eq!(status, 200);
}
