//! The benchmark harness: builds and starts a release `dialtone` on a temporary database
//! (SQLite, or PostgreSQL with `--database-url`), loads it over loopback, and prints each
//! figure beside its reference measured in the same run (`GET /v2.0/ping`).
//!
//! `cargo run --release -p dialtone-bench -- [--database-url postgres://...] [--seconds 10]`

mod load;
mod receiver;
mod seed;
mod server;

use std::time::{Duration, Instant};

use clap::Parser;
use serde_json::json;

/// Options of a benchmark run.
#[derive(Debug, Parser)]
struct Args {
    /// PostgreSQL URL (a fresh schema is made in it); SQLite in a temp dir when absent.
    #[arg(long)]
    database_url: Option<String>,
    /// Seconds per throughput measurement.
    #[arg(long, default_value_t = 10)]
    seconds: u64,
    /// Concurrent connections of the load generator.
    #[arg(long, default_value_t = 64)]
    connections: usize,
    /// SMS stored before the search benchmark.
    #[arg(long, default_value_t = 1_000_000)]
    stored_sms: u64,
    /// Webhook deliveries to time.
    #[arg(long, default_value_t = 20_000)]
    deliveries: u64,
    /// Only these benchmarks (comma separated: start,ping,sms,runs,search,webhooks).
    #[arg(long)]
    only: Option<String>,
}

fn wanted(args: &Args, name: &str) -> bool {
    args.only
        .as_deref()
        .is_none_or(|o| o.split(',').any(|w| w == name))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let binary = server::build_release()?;
    println!(
        "dialtone benchmark: {} cores, database {}",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        if args.database_url.is_some() {
            "PostgreSQL"
        } else {
            "SQLite"
        }
    );

    // Start to ready, and idle memory, on an empty database.
    let mut srv = server::Server::start(&binary, args.database_url.as_deref()).await?;
    if wanted(&args, "start") {
        println!(
            "start to ready (empty database): {:.1} ms",
            srv.ready_after.as_secs_f64() * 1000.0
        );
        tokio::time::sleep(Duration::from_secs(2)).await;
        println!(
            "idle resident memory: {:.1} MB",
            srv.rss_kb()? as f64 / 1024.0
        );
    }
    let key = srv.account("bench", "100000000.00").await?;

    let ping = if wanted(&args, "ping") || wanted(&args, "sms") || wanted(&args, "runs") {
        let r = load::run(
            &srv.base,
            &key,
            args.connections,
            Duration::from_secs(args.seconds),
            || load::Req::get("/v2.0/ping"),
        )
        .await?;
        println!("GET /v2.0/ping (reference): {}", r.summary());
        Some(r)
    } else {
        None
    };

    if wanted(&args, "sms") {
        let r = load::run(
            &srv.base,
            &key,
            args.connections,
            Duration::from_secs(args.seconds),
            || {
                load::Req::post(
                    "/v2.0/sms?to=%2B447700900555",
                    r#"{"body":"Benchmark message"}"#,
                )
            },
        )
        .await?;
        println!("POST /v2.0/sms accepted: {}", r.summary());
        if let Some(p) = &ping {
            println!(
                "  = {:.0}% of the ping rate in the same run",
                100.0 * r.rate() / p.rate()
            );
        }
        let errors = r.non_2xx;
        if errors > 0 {
            println!("  ({errors} answers were not 2xx)");
        }
    }

    if wanted(&args, "runs") {
        let created = srv
            .post(
                &key,
                "/v2.0/actions",
                &json!({"name": "bench", "script": RUNS_SCRIPT}),
            )
            .await?;
        let sid = created["sid"]
            .as_str()
            .ok_or_else(|| anyhow::anyhow!("scenario not created: {created}"))?
            .to_owned();
        let path = format!("/v2.0/actions/{sid}/runs");
        let t0 = Instant::now();
        let r = load::run(
            &srv.base,
            &key,
            args.connections,
            Duration::from_secs(args.seconds),
            move || load::Req::post_owned(path.clone(), r#"{"variables":{"$n":3}}"#),
        )
        .await?;
        println!("POST /v2.0/actions/{{sid}}/runs accepted: {}", r.summary());
        // Every accepted run must finish: count them done, from the first request.
        let done = srv.wait_runs_done(Duration::from_secs(120)).await?;
        let took = t0.elapsed().as_secs_f64();
        println!(
            "  10-step runs completed: {done} in {took:.2} s = {:.0} runs/s end to end",
            done as f64 / took
        );
        if let Some(p) = &ping {
            println!(
                "  = {:.0}% of the ping rate in the same run",
                100.0 * r.rate() / p.rate()
            );
        }
    }

    if wanted(&args, "webhooks") {
        let recv = receiver::Receiver::start("bench-secret").await?;
        srv.post(
            &key,
            "/v2.0/webhooks?type=billing.credit",
            &json!({"endpoint": recv.url, "options": {"hmac_secret": "bench-secret"}}),
        )
        .await?;
        let account = srv.account_sid(&key).await?;
        let started = Instant::now();
        seed::events(&srv.database_url, &account, args.deliveries).await?;
        let seeded = started.elapsed();
        let t0 = Instant::now();
        recv.wait_for(args.deliveries, Duration::from_secs(300))
            .await?;
        let took = t0.elapsed();
        println!(
            "webhook deliveries (signed, verified by the receiver): {:.0}/s ({} in {:.2} s; events committed in {:.2} s; {} bad signatures)",
            args.deliveries as f64 / took.as_secs_f64(),
            args.deliveries,
            took.as_secs_f64(),
            seeded.as_secs_f64(),
            recv.bad_signatures()
        );
        let d = recv.delays();
        println!(
            "  cause-to-receiver delay: p50 {:.1} ms, p99 {:.1} ms",
            d.0, d.1
        );
    }

    if wanted(&args, "search") {
        srv.stop().await?;
        let account = srv.account_sid(&key).await.ok();
        let started = Instant::now();
        let account = match account {
            Some(a) => a,
            None => anyhow::bail!("no account"),
        };
        seed::sms(&srv.database_url, &account, args.stored_sms).await?;
        println!(
            "seeded {} SMS in {:.1} s",
            args.stored_sms,
            started.elapsed().as_secs_f64()
        );
        srv.restart(&binary).await?;
        let day = "createdAfter=2025-06-01T00:00:00Z&createdBefore=2025-06-02T00:00:00Z";
        let r = load::run(
            &srv.base,
            &key,
            8,
            Duration::from_secs(args.seconds),
            move || {
                let n = rand_u32() % 1000;
                load::Req::get_owned(format!(
                    "/v2.0/sms?direction=outbound&{day}&to=%2B33612000{n:03}&limit=10"
                ))
            },
        )
        .await?;
        println!(
            "GET /v2.0/sms over {} SMS (a day, filtered by to): {}",
            args.stored_sms,
            r.summary()
        );
        let check = srv
            .get(
                &key,
                &format!("/v2.0/sms?direction=outbound&{day}&to=%2B33612000123"),
            )
            .await?;
        println!(
            "  (one answer: total {} hits {})",
            check["total"],
            check["hits"].as_array().map_or(0, Vec::len)
        );
    }
    srv.stop().await?;
    Ok(())
}

/// Ten steps with expressions, no outside I/O: what `api-initiated` runs cost the engine.
const RUNS_SCRIPT: &str = r#"variables:
  $total: 0
branches:
  api-initiated:
    actions:
      - action: javascript@v1
        params: { code: "$total = $n * 2" }
      - action: log@v1
        params: { message: "start ${{ run.id }} with ${{ $total }}" }
      - if: "$total > 1"
        then:
          - action: javascript@v1
            params: { code: "$total = $total + 1" }
      - action: javascript@v1
        params: { code: "$list = [1, 2, 3].map(x => x * $total)" }
      - action: log@v1
        params: { message: "list ${{ $list.join(',') }}" }
      - if: "$list.length === 3"
        goto: { branch: second }
  second:
    actions:
      - action: javascript@v1
        params: { code: "$sum = $list.reduce((a, b) => a + b, 0)" }
      - action: log@v1
        params: { message: "sum ${{ $sum }} at ${{ now.toISOString() }}" }
      - action: javascript@v1
        params: { code: "$done = true" }
"#;

fn rand_u32() -> u32 {
    use std::sync::atomic::{AtomicU32, Ordering};
    static STATE: AtomicU32 = AtomicU32::new(2_463_534_242);
    let mut x = STATE.load(Ordering::Relaxed);
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    STATE.store(x, Ordering::Relaxed);
    x
}
