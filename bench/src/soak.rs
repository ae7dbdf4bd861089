//! The soak: a constant load of what retention prunes (top-ups, whose `billing.credit`
//! events each go to a webhook receiver, and runs that log and finish) for minutes, with a
//! short retention, sampling the database's size on disk: once the first records pass their
//! retention the size stops growing.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::receiver::Receiver;
use crate::server::Server;

/// Runs the soak for `minutes` on SQLite with retention `retain` (such as `60s`).
pub(crate) async fn run(binary: &Path, minutes: u64, retain: &str) -> anyhow::Result<()> {
    let mut srv = Server::start_with(
        binary,
        None,
        &[
            "--retain-events",
            retain,
            "--retain-runs",
            retain,
            "--retain-exports",
            retain,
        ],
    )
    .await?;
    let key = srv.account("soak", "100000000.00").await?;
    let receiver = Receiver::start("soak").await?;
    srv.post(
        &key,
        "/v2.0/webhooks?type=billing.credit",
        &json!({"endpoint": receiver.url, "options": {"hmac_secret": "soak"}}),
    )
    .await?;
    let script = "branches:\n  api-initiated:\n    actions:\n      - action: log@v1\n        params: {message: \"${{ 'soak '.repeat(20) }}\"}\n      - action: log@v1\n        params: {message: done}\n";
    let scenario = srv
        .post(
            &key,
            "/v2.0/actions",
            &json!({"name": "soak", "script": script}),
        )
        .await?;
    let sid = scenario["sid"].as_str().unwrap_or_default().to_owned();
    println!(
        "soak: {minutes} min, retention {retain}; every second 200 top-ups (events delivered to a webhook) and 200 runs"
    );
    println!("  elapsed   database on disk   webhook deliveries received");
    let started = Instant::now();
    let end = started + Duration::from_secs(minutes * 60);
    let mut next_sample = started;
    while Instant::now() < end {
        let second = Instant::now();
        for _ in 0..200 {
            srv.top_up("1.00").await?;
            srv.post(&key, &format!("/v2.0/actions/{sid}/runs"), &json!({}))
                .await?;
        }
        if Instant::now() >= next_sample {
            println!(
                "  {:>5} s   {:>10.1} MB   {:>10}",
                started.elapsed().as_secs(),
                srv.sqlite_bytes() as f64 / 1e6,
                receiver.received()
            );
            next_sample += Duration::from_secs(15);
        }
        let spent = second.elapsed();
        if spent < Duration::from_secs(1) {
            tokio::time::sleep(Duration::from_secs(1) - spent).await;
        }
    }
    println!(
        "  {:>5} s   {:>10.1} MB   {:>10}",
        started.elapsed().as_secs(),
        srv.sqlite_bytes() as f64 / 1e6,
        receiver.received()
    );
    srv.stop().await
}
