//! The hostile group, outbound requests: a tenant's webhook endpoint or `fetch` URL cannot
//! reach private addresses of a deployment that refuses them (in any spelling, or through a
//! name), nor this server's `/admin`; the operator's allowlist still works; a receiver that
//! answers without end is read only a little.

use std::time::{Duration, Instant};

use reqwest::Method;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::helpers::{Backend, TestAccount, TestApp, send};
use crate::receiver::Receiver;

/// Emits one `billing.credit` event for the account (an operator top-up).
async fn top_up(app: &TestApp, acct: &TestAccount) {
    let (status, v) = send(
        app.admin(
            Method::POST,
            &format!("/admin/accounts/{}/credit", acct.sid),
        )
        .json(&json!({"amount": "1.00"})),
    )
    .await;
    assert!(status.is_success(), "{v}");
}

/// The tries of the account's only subscription, oldest first.
async fn tries(app: &TestApp, acct: &TestAccount, hook: &str) -> Vec<Value> {
    let (status, v) = send(app.req(
        acct,
        Method::GET,
        &format!("/v2.0/webhooks/{hook}/deliveries?order=asc"),
    ))
    .await;
    assert_eq!(status, 200, "{v}");
    v["hits"].as_array().cloned().unwrap_or_default()
}

/// A deployment that refuses private destinations: a receiver on loopback, reached as
/// `127.0.0.1`, as `2130706433` or through the name `localhost`, gets nothing; each try says
/// why. Allowlisted, the same receiver is reached.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webhooks_to_private_addresses_are_refused_unless_allowed() {
    let app = TestApp::spawn_with(Backend::Sqlite, |c| {
        c.outbound_private = Some(dialtone::outbound::Private::Deny);
    })
    .await
    .expect("app");
    let acct = app.account().await;
    let receiver = Receiver::start().await;
    let port = receiver
        .url
        .split(':')
        .nth(2)
        .and_then(|p| p.split('/').next())
        .unwrap()
        .to_owned();
    for endpoint in [
        receiver.url.clone(),
        format!("http://2130706433:{port}/hook"),
        format!("http://localhost:{port}/hook"),
        format!("http://[::ffff:127.0.0.1]:{port}/hook"),
    ] {
        let hook =
            crate::webhooks::subscribe(&app, &acct, "billing.credit", &endpoint, json!(null)).await;
        let hook = hook["sid"].as_str().unwrap().to_owned();
        top_up(&app, &acct).await;
        app.tick().await;
        let got = tries(&app, &acct, &hook).await;
        assert!(!got.is_empty(), "{endpoint}: tried");
        let error = got[0]["error"].as_str().unwrap_or_default();
        assert!(error.contains("not allowed"), "{endpoint}: {}", got[0]);
        let (status, _) =
            send(app.req(&acct, Method::DELETE, &format!("/v2.0/webhooks/{hook}"))).await;
        assert!(status.is_success());
    }
    assert!(
        receiver.received().is_empty(),
        "nothing reached the receiver"
    );

    let allowed = TestApp::spawn_with(Backend::Sqlite, |c| {
        c.outbound_private = Some(dialtone::outbound::Private::Deny);
        c.outbound_allow = vec![dialtone::outbound::Network::parse("127.0.0.1/32").unwrap()];
    })
    .await
    .expect("app");
    let acct = allowed.account().await;
    crate::webhooks::subscribe(
        &allowed,
        &acct,
        "billing.credit",
        &receiver.url,
        json!(null),
    )
    .await;
    top_up(&allowed, &acct).await;
    allowed.tick().await;
    assert_eq!(
        receiver.received().len(),
        1,
        "the operator's receiver is reached"
    );
}

/// Runs a scenario that fetches `url` and logs `status statusText`; that line.
async fn fetch_log(app: &TestApp, acct: &TestAccount, url: &str) -> String {
    let script = format!(
        "branches:\n  api-initiated:\n    actions:\n      - action: fetch@v1\n        params: {{url: \"{url}\"}}\n        result: $r\n      - action: log@v1\n        params: {{message: \"${{{{ $r.status }}}} ${{{{ $r.statusText }}}}\"}}\n"
    );
    let sid = crate::actions::scenario(app, acct, &script).await;
    let (status, v) = send(app.req(acct, Method::POST, &format!("/v2.0/actions/{sid}/runs"))).await;
    assert_eq!(status, 202, "{v}");
    let run = v["runId"].as_str().unwrap().to_owned();
    let started = Instant::now();
    loop {
        let (_, r) = send(app.req(
            acct,
            Method::GET,
            &format!("/v2.0/actions/{sid}/runs/{run}"),
        ))
        .await;
        if r["status"] != "running" {
            return r["log"][0]["message"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
        }
        assert!(started.elapsed() < Duration::from_secs(10), "{r}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// `fetch@v1` of a private address is refused on such a deployment; on a laptop (the
/// default, listening on loopback) local services answer, but never this server's `/admin`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fetch_cannot_reach_private_addresses_nor_the_operator_routes() {
    let receiver = Receiver::start().await;
    let deny = TestApp::spawn_with(Backend::Sqlite, |c| {
        c.outbound_private = Some(dialtone::outbound::Private::Deny);
    })
    .await
    .expect("app");
    let acct = deny.account().await;
    for url in [
        receiver.url.replace("/hook", "/"),
        "http://169.254.169.254/latest/meta-data/".to_owned(),
    ] {
        let message = fetch_log(&deny, &acct, &url).await;
        assert!(
            message.starts_with("0 ") && message.contains("not allowed"),
            "{url}: {message}"
        );
    }

    let laptop = TestApp::spawn(Backend::Sqlite).await.expect("app");
    let acct = laptop.account().await;
    let own = laptop.url("");
    let message = fetch_log(&laptop, &acct, &format!("{own}/admin/accounts")).await;
    assert!(message.contains("operator routes"), "{message}");
    let message = fetch_log(&laptop, &acct, &format!("{own}/livez")).await;
    assert!(
        message.starts_with("200"),
        "a laptop's local services answer: {message}"
    );
}

/// A receiver that answers 200 with an endless body: the delivery is recorded at once, a
/// few KB read, the rest left with the connection.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endless_webhook_answer_is_not_read() {
    let app = TestApp::spawn(Backend::Sqlite).await.expect("app");
    let acct = app.account().await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    let sent = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let counter = sent.clone();
    let server = tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            let counter = counter.clone();
            tokio::spawn(async move {
                let mut buf = [0u8; 8192];
                let _ = s.read(&mut buf).await;
                let _ = s
                    .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 536870912\r\n\r\n")
                    .await;
                let chunk = vec![b'x'; 65536];
                while s.write_all(&chunk).await.is_ok() {
                    counter.fetch_add(chunk.len() as u64, std::sync::atomic::Ordering::Relaxed);
                }
            });
        }
    });
    let hook = crate::webhooks::subscribe(&app, &acct, "billing.credit", &url, json!(null)).await;
    let hook = hook["sid"].as_str().unwrap().to_owned();
    top_up(&app, &acct).await;
    let started = Instant::now();
    app.tick().await;
    let took = started.elapsed();
    let got = tries(&app, &acct, &hook).await;
    assert_eq!(got[0]["statusCode"], 200, "{}", got[0]);
    assert_eq!(got[0]["deliveryStatus"], "delivered");
    let streamed = sent.load(std::sync::atomic::Ordering::Relaxed);
    eprintln!("endless answer: delivery recorded in {took:?}; the receiver wrote {streamed} bytes");
    assert!(took < Duration::from_secs(3), "{took:?}");
    assert!(
        streamed < 64 * 1024 * 1024,
        "read {streamed} bytes of the answer"
    );
    server.abort();
}

/// One account's slow work does not hold up another's: its receiver hangs, 99 of its
/// subscriptions (its quota, 100, with the hanging one) point at dead endpoints, two of its runs wait on `fetch` targets that never
/// answer, ten of its files wait to convert; meanwhile another account's webhook arrives
/// and its file converts at once. The real worker loops run (real time is the point:
/// measured and bounded).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_accounts_slow_work_does_not_hold_up_anothers() {
    let app = TestApp::spawn_with(Backend::Sqlite, |c| {
        c.run_workers = true;
        c.webhook_timeout_ms = 5_000;
    })
    .await
    .expect("app");
    let noisy = app.account().await;
    let quiet = app.account().await;
    // A receiver that never answers, and an address that never answers a fetch.
    let hang = Receiver::start().await;
    hang.script(&[], Some(crate::receiver::Reply::Hang));
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let silent_url = format!("http://{}/", silent.local_addr().unwrap());
    let holder = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((s, _)) = silent.accept().await {
            held.push(s);
        }
    });
    crate::webhooks::subscribe(&app, &noisy, "billing.credit", &hang.url, json!(null)).await;
    for i in 0..99 {
        let dead = format!("http://127.0.0.1:9/dead{i}");
        crate::webhooks::subscribe(&app, &noisy, "billing.credit", &dead, json!(null)).await;
    }
    let fetcher = crate::actions::scenario(
        &app,
        &noisy,
        &format!(
            "branches:\n  api-initiated:\n    actions:\n      - action: fetch@v1\n        params: {{url: \"{silent_url}\", timeout: 30}}\n"
        ),
    )
    .await;
    for _ in 0..2 {
        let (status, _) = send(app.req(
            &noisy,
            Method::POST,
            &format!("/v2.0/actions/{fetcher}/runs"),
        ))
        .await;
        assert_eq!(status, 202);
    }
    let wav = {
        let mut w = Vec::new();
        w.extend_from_slice(b"RIFF");
        w.extend_from_slice(&(36u32 + 480_000).to_le_bytes());
        w.extend_from_slice(b"WAVEfmt ");
        w.extend_from_slice(&16u32.to_le_bytes());
        w.extend_from_slice(&1u16.to_le_bytes());
        w.extend_from_slice(&1u16.to_le_bytes());
        w.extend_from_slice(&48_000u32.to_le_bytes());
        w.extend_from_slice(&96_000u32.to_le_bytes());
        w.extend_from_slice(&2u16.to_le_bytes());
        w.extend_from_slice(&16u16.to_le_bytes());
        w.extend_from_slice(b"data");
        w.extend_from_slice(&480_000u32.to_le_bytes());
        w.resize(44 + 480_000, 0);
        w
    };
    for i in 0..10 {
        crate::audio_files::upload(&app, &noisy, &format!("n{i}"), "audio/wav", &wav).await;
    }
    top_up(&app, &noisy).await;
    tokio::time::sleep(Duration::from_millis(300)).await;

    // The quiet account: a webhook and a file.
    let fine = Receiver::start().await;
    crate::webhooks::subscribe(&app, &quiet, "billing.credit", &fine.url, json!(null)).await;
    let started = Instant::now();
    top_up(&app, &quiet).await;
    let file = crate::audio_files::upload(&app, &quiet, "mine", "audio/wav", &wav).await;
    let mut delivered = None;
    let mut converted = None;
    while delivered.is_none() || converted.is_none() {
        if delivered.is_none() && !fine.received().is_empty() {
            delivered = Some(started.elapsed());
        }
        if converted.is_none() {
            let (_, f) =
                send(app.req(&quiet, Method::GET, &format!("/v2.0/audio-files/{file}"))).await;
            if f["status"] == "ready" {
                converted = Some(started.elapsed());
            }
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "delivered {delivered:?}, converted {converted:?}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let (delivered, converted) = (delivered.unwrap(), converted.unwrap());
    eprintln!(
        "beside the noisy account: webhook after {delivered:?}, file ready after {converted:?}"
    );
    assert!(delivered < Duration::from_secs(1), "{delivered:?}");
    assert!(converted < Duration::from_secs(3), "{converted:?}");
    holder.abort();
}
