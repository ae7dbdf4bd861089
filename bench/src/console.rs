//! The console's lists over the seeded SMS (`--stored-sms`, a million by default): each list
//! the page asks for, timed one request at a time on one keep-alive connection signed in with
//! a console session (cookie and CSRF token, as the browser sends them), so every figure is
//! the server's time plus one loopback round trip.

use std::time::Instant;

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::client::conn::http1;
use hyper_util::rt::TokioIo;
use serde_json::Value;
use tokio::net::TcpStream;

use crate::server::Server;

/// Requests per list: enough for a p99 over a handful of slow ones.
const TIMES: usize = 200;
/// Pages walked from the newest, following `next`, in the depth figure.
const DEPTH: usize = 500;

/// A connection signed in to the console.
struct Console {
    sender: http1::SendRequest<Full<Bytes>>,
    host: String,
    cookie: String,
    csrf: String,
}

impl Console {
    /// Signs in with the account's API key, as the page's sign-in form does.
    async fn sign_in(base: &str, key: &str) -> anyhow::Result<Self> {
        let host = base.trim_start_matches("http://").to_owned();
        let stream = TcpStream::connect(&host).await?;
        stream.set_nodelay(true)?;
        let (mut sender, conn) = http1::handshake(TokioIo::new(stream)).await?;
        tokio::spawn(conn);
        let body = serde_json::json!({ "apiKey": key }).to_string();
        let resp = sender
            .send_request(
                hyper::Request::builder()
                    .method("POST")
                    .uri("/console/session")
                    .header("host", &host)
                    .header("content-type", "application/json")
                    .body(Full::new(Bytes::from(body)))?,
            )
            .await?;
        let cookie = resp
            .headers()
            .get("set-cookie")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split(';').next())
            .ok_or_else(|| anyhow::anyhow!("sign-in set no cookie"))?
            .to_owned();
        let answer: Value = serde_json::from_slice(&resp.into_body().collect().await?.to_bytes())?;
        let csrf = answer["csrf"]
            .as_str()
            .ok_or_else(|| anyhow::anyhow!("sign-in answered no csrf: {answer}"))?
            .to_owned();
        Ok(Self {
            sender,
            host,
            cookie,
            csrf,
        })
    }

    /// One GET; its answer and how long it took in microseconds.
    async fn get(&mut self, path: &str) -> anyhow::Result<(Value, u32)> {
        let req = hyper::Request::builder()
            .method("GET")
            .uri(path)
            .header("host", &self.host)
            .header("cookie", &self.cookie)
            .header("x-csrf-token", &self.csrf)
            .body(Full::new(Bytes::new()))?;
        let t = Instant::now();
        self.sender.ready().await?;
        let resp = self.sender.send_request(req).await?;
        let status = resp.status().as_u16();
        let bytes = resp.into_body().collect().await?.to_bytes();
        let took = u32::try_from(t.elapsed().as_micros()).unwrap_or(u32::MAX);
        anyhow::ensure!(
            status == 200,
            "GET {path}: {status} {}",
            String::from_utf8_lossy(&bytes)
        );
        Ok((serde_json::from_slice(&bytes)?, took))
    }
}

/// p50, p99 and max of latencies in microseconds, in milliseconds.
fn spread(mut us: Vec<u32>) -> String {
    us.sort_unstable();
    let at = |p: f64| f64::from(us[((us.len() - 1) as f64 * p).round() as usize]) / 1000.0;
    format!(
        "p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms ({} requests)",
        at(0.5),
        at(0.99),
        at(1.0),
        us.len()
    )
}

/// Times `TIMES` requests of one list (`path(i)` for the i-th) and prints them with the rows
/// of the last page and whether it had a next.
async fn time_list(
    console: &mut Console,
    label: &str,
    path: impl Fn(usize) -> String,
) -> anyhow::Result<()> {
    let mut us = Vec::with_capacity(TIMES);
    let mut rows = String::new();
    for i in 0..TIMES {
        let (page, took) = console.get(&path(i)).await?;
        if let Some(items) = page["items"].as_array() {
            rows = format!(
                " [{} rows a page{}]",
                items.len(),
                if page["next"].is_string() {
                    ", more"
                } else {
                    ""
                }
            );
        }
        us.push(took);
    }
    println!("  {label}: {}{rows}", spread(us));
    Ok(())
}

/// The console's lists over the stored SMS, calls and ledger of the account behind `key`.
pub(crate) async fn run(srv: &Server, key: &str, stored_sms: u64) -> anyhow::Result<()> {
    let mut console = Console::sign_in(&srv.base, key).await?;
    println!("console lists over {stored_sms} SMS (one connection, cookie and CSRF):");
    time_list(&mut console, "SMS, first page", |_| {
        "/console/api/sms".to_owned()
    })
    .await?;
    time_list(&mut console, "SMS, to one recipient", |i| {
        format!("/console/api/sms?to=%2B33612000{:03}", i % 1000)
    })
    .await?;
    time_list(&mut console, "SMS, status delivered", |_| {
        "/console/api/sms?status=delivered".to_owned()
    })
    .await?;
    time_list(&mut console, "SMS, status failed (none match)", |_| {
        "/console/api/sms?status=failed".to_owned()
    })
    .await?;
    time_list(&mut console, "SMS, body contains a word", |_| {
        "/console/api/sms?contains=benchmark".to_owned()
    })
    .await?;
    time_list(&mut console, "SMS, body contains a word none has", |_| {
        "/console/api/sms?contains=zebra".to_owned()
    })
    .await?;
    time_list(&mut console, "SMS, inbound (none stored)", |_| {
        "/console/api/sms?direction=inbound".to_owned()
    })
    .await?;

    // Deep paging: the page at any depth costs what the first does.
    let mut us = Vec::with_capacity(DEPTH);
    let mut path = "/console/api/sms?limit=50".to_owned();
    for _ in 0..DEPTH {
        let (page, took) = console.get(&path).await?;
        us.push(took);
        match page["next"].as_str() {
            Some(next) => path = format!("/console/api/sms?limit=50&after={next}"),
            None => break,
        }
    }
    println!(
        "  SMS, {} pages walked by `next` (down to row {}): {}",
        us.len(),
        us.len() * 50,
        spread(us)
    );
    // A page near the oldest row: the cursor of a row a million rows down.
    time_list(&mut console, "SMS, a page at the oldest end", |_| {
        "/console/api/sms?after=1747267300000.60&limit=50".to_owned()
    })
    .await?;

    time_list(&mut console, "SMS detail with its parts and history", |i| {
        format!(
            "/console/api/sms/s{:07}",
            (i as u64 * 4999) % stored_sms.max(1)
        )
    })
    .await?;
    time_list(&mut console, "an SMS's webhook deliveries", |i| {
        format!(
            "/console/api/sms/s{:07}/deliveries",
            (i as u64 * 4999) % stored_sms.max(1)
        )
    })
    .await?;
    time_list(&mut console, "calls", |_| "/console/api/calls".to_owned()).await?;
    time_list(&mut console, "ledger", |_| "/console/api/ledger".to_owned()).await?;
    Ok(())
}
