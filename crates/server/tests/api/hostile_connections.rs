//! The hostile group, connections and authentication: a body trickled a byte at a time has
//! one deadline; JSON-RPC checks credentials before it reads a body; a client address holds
//! a bounded number of connections and others are served beside it; failed authentications
//! lock an address out for the rest of the minute; password checks run a few at a time, and
//! an unknown login costs what a wrong password costs.

use std::time::{Duration, Instant};

use dialtone_domain::Clock;
use reqwest::Method;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

use crate::both_backends;
use crate::helpers::{Backend, TestApp, send};

both_backends!(failed_authentications_lock_the_address_out_for_the_minute);

fn addr(app: &TestApp) -> std::net::SocketAddr {
    app.url("")
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .parse()
        .expect("server address")
}

/// A connection from `local` (any address of 127/8 works on Linux loopback).
async fn connect_from(app: &TestApp, local: [u8; 4]) -> TcpStream {
    let socket = TcpSocket::new_v4().expect("socket");
    socket
        .bind(std::net::SocketAddr::from((local, 0)))
        .expect("bind a loopback address");
    socket.connect(addr(app)).await.expect("connect")
}

/// What the server writes until it closes (bounded).
async fn until_closed(stream: &mut TcpStream, within: Duration) -> String {
    let mut out = Vec::new();
    let read = tokio::time::timeout(within, stream.read_to_end(&mut out)).await;
    assert!(read.is_ok(), "the server never closed the connection");
    String::from_utf8_lossy(&out).into_owned()
}

/// A body sent one byte a second: under a per-frame timeout it would last forever; under
/// the request's deadline (here 2 s) it ends in 400 on time, and nothing is created.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_trickled_byte_by_byte_meets_one_deadline() {
    let app = TestApp::spawn_with(Backend::Sqlite, |c| c.body_timeout_ms = 2_000)
        .await
        .expect("app");
    let acct = app.account().await;
    let mut trickle = connect_from(&app, [127, 0, 0, 1]).await;
    let head = format!(
        "POST /v2.0/end-users HTTP/1.1\r\nHost: dialtone\r\nx-api-key: {}\r\ncontent-type: application/json\r\ncontent-length: 4000\r\nconnection: close\r\n\r\n",
        acct.api_key
    );
    trickle.write_all(head.as_bytes()).await.expect("head");
    let started = Instant::now();
    let (mut reader, mut writer) = trickle.into_split();
    let sender = tokio::spawn(async move {
        for _ in 0..20 {
            if writer.write_all(b" ").await.is_err() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    });
    let mut out = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(8), reader.read_to_end(&mut out)).await;
    sender.abort();
    assert!(
        read.is_ok(),
        "the trickle held the request past its deadline"
    );
    let answer = String::from_utf8_lossy(&out);
    assert!(answer.starts_with("HTTP/1.1 400"), "{answer}");
    let took = started.elapsed();
    assert!(took < Duration::from_millis(4_000), "{took:?}");
    let (_, users) = send(app.req(&acct, Method::GET, "/v2.0/end-users")).await;
    assert_eq!(users["total"], 0, "{users}");
}

/// JSON-RPC with wrong credentials is answered at once, before the body it announced (1 MB,
/// never sent) arrives; with good ones it waits for the body.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_rpc_checks_credentials_before_reading_the_body() {
    let app = TestApp::spawn(Backend::Sqlite).await.expect("app");
    let mut conn = connect_from(&app, [127, 0, 0, 1]).await;
    conn.write_all(
        b"POST /json-rpc/v1.1/ HTTP/1.1\r\nHost: dialtone\r\nauthorization: Api-Key dt_not_a_key\r\ncontent-type: application/json\r\ncontent-length: 1000000\r\n\r\n{",
    )
    .await
    .expect("head");
    let mut buf = vec![0u8; 4096];
    let n = tokio::time::timeout(Duration::from_secs(3), conn.read(&mut buf))
        .await
        .expect("answered without the body")
        .expect("read");
    let answer = String::from_utf8_lossy(&buf[..n]);
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.contains("\"code\":22"), "{answer}");
}

/// One address opens as many connections as it may (here 8) and idles on them: its next is
/// refused with a 503 at once, while a client at another address is served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_address_cannot_take_every_connection() {
    let app = TestApp::spawn_with(Backend::Sqlite, |c| {
        c.max_connections_per_ip = 8;
        c.max_connections = 12;
    })
    .await
    .expect("app");
    let acct = app.account().await;
    let mut held = Vec::new();
    for _ in 0..8 {
        let mut c = connect_from(&app, [127, 0, 0, 9]).await;
        c.write_all(b"GET /livez HTTP/1.1\r\nHost: d\r\n\r\n")
            .await
            .expect("write");
        let mut buf = [0u8; 256];
        let n = c.read(&mut buf).await.expect("read");
        assert!(buf[..n].starts_with(b"HTTP/1.1 200"), "kept alive, served");
        held.push(c);
    }
    let mut ninth = connect_from(&app, [127, 0, 0, 9]).await;
    let refused = until_closed(&mut ninth, Duration::from_secs(3)).await;
    assert!(refused.starts_with("HTTP/1.1 503"), "{refused}");
    // Another address is served.
    let mut other = connect_from(&app, [127, 0, 0, 10]).await;
    let req = format!(
        "GET /v2.0/ping HTTP/1.1\r\nHost: d\r\nx-api-key: {}\r\nconnection: close\r\n\r\n",
        acct.api_key
    );
    other.write_all(req.as_bytes()).await.expect("write");
    let served = until_closed(&mut other, Duration::from_secs(3)).await;
    assert!(served.starts_with("HTTP/1.1 200"), "{served}");
    // The total: 8 held + 4 more from elsewhere, then the server is full for everyone.
    for i in 0..4u8 {
        let mut c = connect_from(&app, [127, 0, 1, i]).await;
        c.write_all(b"GET /livez HTTP/1.1\r\nHost: d\r\n\r\n")
            .await
            .expect("write");
        let mut buf = [0u8; 256];
        let _ = c.read(&mut buf).await;
        held.push(c);
    }
    let mut full = connect_from(&app, [127, 0, 2, 1]).await;
    let refused = until_closed(&mut full, Duration::from_secs(3)).await;
    assert!(refused.starts_with("HTTP/1.1 503"), "{refused}");
    drop(held);
}

/// After 20 failed authentications in a minute, an address is refused (429, `Retry-After`)
/// on every interface, good credentials included, until the minute is over.
async fn failed_authentications_lock_the_address_out_for_the_minute(app: TestApp) {
    let acct = app.account().await;
    let rpc = |auth: (&str, &str)| {
        app.anon(Method::POST, "/json-rpc/v1.1/")
            .basic_auth(auth.0, Some(auth.1))
            .json(
                &json!({"jsonrpc": "2.0", "id": 1, "method": "system.get_timestamp", "params": []}),
            )
    };
    for i in 0..20 {
        let (status, v) = send(rpc((&acct.login, "wrong"))).await;
        assert_eq!(status, 200);
        assert_eq!(v["error"]["code"], 22, "failure {i}: {v}");
    }
    let (_, v) = send(rpc((&acct.login, &acct.password))).await;
    assert_eq!(v["error"]["data"]["code"], "rate_limited", "{v}");
    let (status, v) = send(app.req(&acct, Method::GET, "/v2.0/ping")).await;
    assert_eq!(status, 429, "{v}");
    let resp = app
        .anon(Method::GET, "/rest/v1.1/sms?type=OUT")
        .basic_auth(&acct.login, Some(&acct.password))
        .send()
        .await
        .expect("send");
    assert_eq!(resp.status(), 429);
    assert!(resp.headers().contains_key("retry-after"));
    app.clock.advance_ms(60_000);
    let (status, _) = send(app.req(&acct, Method::GET, "/v2.0/ping")).await;
    assert_eq!(status, 200, "the minute is over");
    let (_, v) = send(rpc((&acct.login, &acct.password))).await;
    assert!(v.get("result").is_some(), "{v}");
    let _ = app.clock.now();
}

/// 96 wrong passwords at once (the address limit off): argon2 runs a few at a time, so the
/// process does not grow by the 19 MiB each check takes (96 at once would be 1.8 GB).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn password_checks_run_a_few_at_a_time() {
    let app = TestApp::spawn_with(Backend::Sqlite, |c| c.auth_failures_per_minute = 0)
        .await
        .expect("app");
    let acct = app.account().await;
    let before = rss_mb();
    let peak = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(before));
    let watcher = {
        let peak = peak.clone();
        tokio::spawn(async move {
            loop {
                peak.fetch_max(rss_mb(), std::sync::atomic::Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
    };
    let attempts = (0..96).map(|_| {
        send(
            app.anon(Method::POST, "/json-rpc/v1.1/")
                .basic_auth(&acct.login, Some("wrong"))
                .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "system.get_timestamp", "params": []})),
        )
    });
    let answers: Vec<(reqwest::StatusCode, Value)> = futures_util::future::join_all(attempts).await;
    watcher.abort();
    for (_, v) in &answers {
        let code = &v["error"]["code"];
        let limited = v["error"]["data"]["code"] == "rate_limited";
        assert!(*code == 22 || limited, "{v}");
    }
    let grew = peak
        .load(std::sync::atomic::Ordering::Relaxed)
        .saturating_sub(before);
    eprintln!("96 wrong passwords at once: resident memory grew by at most {grew} MB");
    assert!(grew < 400, "grew by {grew} MB");
}

fn rss_mb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<u64>().ok())
        })
        .map_or(0, |kb| kb / 1024)
}

/// An unknown login is checked against a decoy: it costs what a wrong password costs, so
/// timing does not tell which logins exist.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_login_costs_what_a_wrong_password_costs() {
    let app = TestApp::spawn_with(Backend::Sqlite, |c| c.auth_failures_per_minute = 0)
        .await
        .expect("app");
    let acct = app.account().await;
    let once = |login: String| {
        let app = &app;
        async move {
            let started = Instant::now();
            let (_, v) = send(
                app.anon(Method::POST, "/json-rpc/v1.1/")
                    .basic_auth(&login, Some("wrong"))
                    .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "system.get_timestamp", "params": []})),
            )
            .await;
            assert_eq!(v["error"]["code"], 22, "{v}");
            started.elapsed()
        }
    };
    // Interleaved, and compared by their medians: load from other tests on the machine
    // falls on both alike.
    let (mut known, mut unknown) = (Vec::new(), Vec::new());
    for _ in 0..9 {
        known.push(once(acct.login.clone()).await);
        unknown.push(once("nobody-by-that-login".to_owned()).await);
    }
    let median = |mut v: Vec<Duration>| {
        v.sort();
        v[v.len() / 2]
    };
    let (known, unknown) = (median(known), median(unknown));
    eprintln!("a wrong password, median of 9: known login {known:?}, unknown login {unknown:?}");
    let ratio = unknown.as_secs_f64() / known.as_secs_f64();
    assert!(
        (0.5..2.0).contains(&ratio),
        "known {known:?}, unknown {unknown:?}"
    );
}
