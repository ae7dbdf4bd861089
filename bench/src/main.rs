//! The benchmark harness: builds and starts a release `dialtone` on a temporary database
//! (SQLite, or PostgreSQL with `--database-url`), loads it over loopback, and prints each
//! figure beside its reference measured in the same run (`GET /v2.0/ping`).
//!
//! `cargo run --release -p dialtone-bench -- [--database-url postgres://...] [--seconds 10]`

mod bystander;
mod console;
mod crash;
mod load;
mod nodes;
mod receiver;
mod seed;
mod server;
mod soak;
mod speech;
mod voice;

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
    /// Rounds of the SMS benchmark, each with its own ping reference just before it; the
    /// median ratio is printed after the rounds.
    #[arg(long, default_value_t = 1)]
    rounds: usize,
    /// Concurrent connections of the load generator.
    #[arg(long, default_value_t = 64)]
    connections: usize,
    /// SMS stored before the search benchmark.
    #[arg(long, default_value_t = 1_000_000)]
    stored_sms: u64,
    /// Webhook deliveries to time.
    #[arg(long, default_value_t = 20_000)]
    deliveries: u64,
    /// Simulated calls held at once in the calls benchmark.
    #[arg(long, default_value_t = 2_000)]
    held_calls: usize,
    /// Calls stored before the export benchmark.
    #[arg(long, default_value_t = 1_000_000)]
    exported_calls: u64,
    /// Only these benchmarks (comma separated:
    /// start,ping,sms,sms-watched,runs,calls,search,console,webhooks,export),
    /// or one of those never run by default: `voice` (SIP calls held with RTP), `speech`
    /// (synthesis, transcription, the first audio of `say`), `crash` (the kill -9 test),
    /// `soak` (the database's size under a constant load with a short retention), `nodes`
    /// (`POST /v2.0/sms` through `--nodes` nodes on one PostgreSQL).
    #[arg(long)]
    only: Option<String>,
    /// Minutes of the soak (`--only soak`).
    #[arg(long, default_value_t = 5)]
    soak_minutes: u64,
    /// Retention of the soak's records.
    #[arg(long, default_value = "60s")]
    soak_retain: String,
    /// Levels of concurrent SIP calls of the voice benchmark (comma separated).
    #[arg(long, default_value = "50,100,200,400,600,800,1000,1200,1600,2000")]
    voice_levels: String,
    /// Seconds each SIP call of the voice benchmark is held.
    #[arg(long, default_value_t = 30)]
    voice_hold: u64,
    /// Calls a second SIPp places in the voice benchmark.
    #[arg(long, default_value_t = 200)]
    voice_cps: usize,
    /// Kills of the crash test.
    #[arg(long, default_value_t = 20)]
    kills: usize,
    /// Server processes of the crash test and of `nodes` (several need --database-url).
    #[arg(long, default_value_t = 1)]
    nodes: usize,
    /// Run this server binary instead of building the release one (CI runs the crash test
    /// on the debug build it already has; figures need the release build).
    #[arg(long)]
    server_binary: Option<std::path::PathBuf>,
}

/// Server CPU time since `cpu0` per item, in microseconds.
fn cpu_per(srv: &server::Server, cpu0: f64, items: u64) -> anyhow::Result<f64> {
    Ok((srv.cpu_ms()? - cpu0) * 1000.0 / items.max(1) as f64)
}

/// A load of `args.connections` connections for `args.seconds`, each request from `make`.
async fn load_with_args(
    srv: &server::Server,
    key: &str,
    args: &Args,
    make: impl Fn() -> load::Req + Send + Sync + Clone + 'static,
) -> anyhow::Result<load::Report> {
    load::run(
        &srv.base,
        key,
        args.connections,
        Duration::from_secs(args.seconds),
        make,
    )
    .await
}

/// `GET /v2.0/ping` under load: the reference of every rate.
async fn measure_ping(
    srv: &server::Server,
    key: &str,
    args: &Args,
) -> anyhow::Result<load::Report> {
    let cpu0 = srv.cpu_ms()?;
    let r = load_with_args(srv, key, args, || load::Req::get("/v2.0/ping")).await?;
    println!("GET /v2.0/ping (reference): {}", r.summary());
    println!(
        "  server CPU per request: {:.0} us",
        cpu_per(srv, cpu0, r.count())?
    );
    Ok(r)
}

/// One round of `POST /v2.0/sms`: the accepted rate, then the wait until every accepted SMS
/// went through its four status moves. Returns the rate's percentage of `ping_rate`, and
/// the SMS delivered in all (`delivered_before` of them in earlier rounds).
async fn sms_round(
    srv: &server::Server,
    keys: &SmsKeys,
    args: &Args,
    ping_rate: f64,
    delivered_before: i64,
) -> anyhow::Result<(f64, i64)> {
    let key = keys.load.as_str();
    // Opened before the clock starts, and used for both counts below.
    let progress = seed::open(&srv.database_url).await?;
    let newest_before = seed::newest_sms(&progress).await?;
    let t0 = Instant::now();
    let cpu0 = srv.cpu_ms()?;
    let pg0 = nodes::postgres_cpu_ms();
    let bystander = tokio::spawn(bystander::run(
        srv.base.clone(),
        keys.bystander.clone(),
        t0 + Duration::from_secs(args.seconds),
    ));
    let r = load_with_args(srv, key, args, || {
        load::Req::post(
            "/v2.0/sms?to=%2B447700900555",
            r#"{"body":"Benchmark message"}"#,
        )
    })
    .await?;
    println!("POST /v2.0/sms accepted: {}", r.summary());
    println!(
        "  server CPU per request during the load: {:.0} us",
        cpu_per(srv, cpu0, r.count())?
    );
    if args.database_url.is_some() {
        println!(
            "  PostgreSQL CPU per request during the load: {:.0} us",
            (nodes::postgres_cpu_ms() - pg0) * 1000.0 / r.count().max(1) as f64
        );
    }
    let ratio = 100.0 * r.rate() / ping_rate;
    println!("  = {ratio:.1}% of the ping rate in the same run");
    // A rate held up by moves put off is not a rate: how many of the load's SMS were still
    // on their way when it ended (the timetable keeps the last 0.6 s of them in flight).
    let behind = seed::count(&progress, seed::SMS_SETTLED.pending).await?
        + seed::count(
            &progress,
            &seed::planned_after(
                newest_before,
                Some(dialtone_domain::Timestamp::now_system()),
            ),
        )
        .await?;
    println!(
        "  not yet delivered when the load ended: {behind} ({:.1}% of those accepted)",
        100.0 * behind as f64 / r.count().max(1) as f64
    );
    let errors = r.non_2xx;
    if errors > 0 {
        println!("  ({errors} answers were not 2xx)");
    }
    // The worker must keep up: every accepted SMS goes through its four status moves (each
    // with its history line and event, when someone receives it) to `delivered`.
    let mut delivered =
        seed::wait_finished(&progress, &seed::SMS_SETTLED, Duration::from_secs(300)).await?;
    // Those whose moves nobody receives are planned to their delivery and never visited
    // (`Sms::take_planned`): reads show them delivered once the newest one's time has come.
    if seed::wait_planned(&progress).await? {
        delivered = seed::count(&progress, seed::SMS_SETTLED.done).await?;
    }
    let took = t0.elapsed().as_secs_f64();
    let done = delivered - delivered_before;
    println!(
        "  SMS delivered as reads show them (4 status moves each): {done} in {took:.2} s = {:.0} \
         SMS/s end to end, server CPU {:.0} us per SMS",
        done as f64 / took,
        cpu_per(srv, cpu0, u64::try_from(done).unwrap_or(0))?
    );
    let planned = seed::count(&progress, &seed::planned_after(newest_before, None)).await?;
    println!("  of which planned to their delivery, never visited by the worker: {planned}");
    if args.database_url.is_some() {
        println!(
            "  PostgreSQL CPU {:.0} us per SMS end to end",
            (nodes::postgres_cpu_ms() - pg0) * 1000.0 / done.max(1) as f64
        );
    }
    println!("  {}", bystander::summary(&bystander.await??));
    Ok((ratio, delivered))
}

fn wanted(args: &Args, name: &str) -> bool {
    args.only
        .as_deref()
        .is_none_or(|o| o.split(',').any(|w| w == name))
}

fn asked(args: &Args, name: &str) -> bool {
    args.only
        .as_deref()
        .is_some_and(|o| o.split(',').any(|w| w == name))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let binary = match &args.server_binary {
        Some(path) => path.clone(),
        None => server::build_release()?,
    };
    let result = run(&args, &binary).await;
    // The schema of this run (every server of it used the same), gone with the run.
    if let Some(url) = &args.database_url
        && let Err(e) = seed::drop_schema(url).await
    {
        eprintln!("the benchmark's schema could not be dropped: {e:#}");
    }
    result
}

/// Every benchmark asked for, in turn.
async fn run(args: &Args, binary: &std::path::Path) -> anyhow::Result<()> {
    println!(
        "dialtone benchmark: {} cores, database {}",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        if args.database_url.is_some() {
            "PostgreSQL"
        } else {
            "SQLite"
        }
    );

    if asked(args, "soak") {
        return soak::run(binary, args.soak_minutes, &args.soak_retain).await;
    }
    if asked(args, "voice") {
        let levels: Vec<usize> = args
            .voice_levels
            .split(',')
            .filter_map(|l| l.trim().parse().ok())
            .collect();
        return voice::run(binary, &levels, args.voice_hold, args.voice_cps).await;
    }
    if asked(args, "speech") {
        return speech::run(binary).await;
    }
    if asked(args, "nodes") {
        let url = args
            .database_url
            .as_deref()
            .ok_or_else(|| anyhow::anyhow!("--only nodes needs --database-url (PostgreSQL)"))?;
        return nodes::run(binary, url, args.nodes, args.connections, args.seconds).await;
    }
    if asked(args, "crash") {
        return crash::run(binary, args.database_url.as_deref(), args.kills, args.nodes).await;
    }
    // Start to ready, and idle memory, on an empty database.
    let mut srv = server::Server::start(binary, args.database_url.as_deref()).await?;
    if wanted(args, "start") {
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

    let ping = if wanted(args, "ping") || wanted(args, "sms") || wanted(args, "runs") {
        Some(measure_ping(&srv, &key, args).await?)
    } else {
        None
    };

    let bystander = if wanted(args, "sms") || wanted(args, "sms-watched") {
        srv.other_account("bystander", "1000.00").await?
    } else {
        String::new()
    };
    let mut delivered = 0;
    if wanted(args, "sms") {
        let keys = SmsKeys {
            load: key.clone(),
            bystander: bystander.clone(),
        };
        delivered = sms_rounds(&srv, &keys, args, ping.as_ref()).await?;
    }
    if wanted(args, "sms-watched") {
        // The same load from an account a console feed watches: its SMS's moves are
        // recorded, so none is planned and the worker makes each move, with its event.
        let (sid, load) = srv.create_account("watched", "100000000.00").await?;
        seed::watch(&srv.database_url, &sid).await?;
        println!("The same, from an account a console feed watches (nothing planned):");
        let keys = SmsKeys { load, bystander };
        let reference = match &ping {
            Some(p) => p.rate(),
            None => measure_ping(&srv, &keys.load, args).await?.rate(),
        };
        sms_round(&srv, &keys, args, reference, delivered).await?;
    }
    if wanted(args, "runs") {
        runs(&srv, &key, args, ping.as_ref()).await?;
    }
    if wanted(args, "webhooks") {
        webhooks(&mut srv, binary, &key, args).await?;
    }
    if wanted(args, "search") || wanted(args, "console") {
        seed_stored_sms(&mut srv, binary, args).await?;
    }
    if wanted(args, "search") {
        search(&srv, &key, args).await?;
    }
    if wanted(args, "console") {
        console::run(&srv, &key, args.stored_sms).await?;
    }
    if wanted(args, "calls") {
        held_calls(&srv, &key, args.held_calls).await?;
    }
    if wanted(args, "export") {
        export(&mut srv, binary, &key, args.exported_calls).await?;
    }
    srv.stop().await?;
    Ok(())
}

/// The keys of the SMS benchmark: the account that makes the load, and another that sends
/// an SMS now and then meanwhile (`bystander`).
struct SmsKeys {
    load: String,
    bystander: String,
}

/// `args.rounds` rounds of `POST /v2.0/sms`, each against its own ping reference (`ping` for
/// the first, when measured), then the median ratio when there were several rounds.
async fn sms_rounds(
    srv: &server::Server,
    keys: &SmsKeys,
    args: &Args,
    ping: Option<&load::Report>,
) -> anyhow::Result<i64> {
    let key = keys.load.as_str();
    // Each round after the first measures ping again, once the last round's SMS are all
    // delivered: the ratio compares two loads a few seconds apart, not minutes.
    let (mut ratios, mut delivered) = (Vec::new(), 0);
    for round in 1..=args.rounds.max(1) {
        let reference = match (ping, round) {
            (Some(p), 1) => p.rate(),
            _ => measure_ping(srv, key, args).await?.rate(),
        };
        let (ratio, total) = sms_round(srv, keys, args, reference, delivered).await?;
        ratios.push(ratio);
        delivered = total;
    }
    if ratios.len() > 1 {
        ratios.sort_by(f64::total_cmp);
        let n = ratios.len();
        let median = (ratios[(n - 1) / 2] + ratios[n / 2]) / 2.0;
        println!(
            "POST /v2.0/sms over {n} rounds: median {median:.1}% of the ping rate (from {:.1}% to {:.1}%)",
            ratios[0],
            ratios[n - 1]
        );
    }
    Ok(delivered)
}

/// `POST /v2.0/actions/{sid}/runs` of a 10-step scenario: the accepted rate, then the wait
/// until every accepted run finished, and the rate's percentage of `ping`'s when measured.
async fn runs(
    srv: &server::Server,
    key: &str,
    args: &Args,
    ping: Option<&load::Report>,
) -> anyhow::Result<()> {
    let created = srv
        .post(
            key,
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
    let (cpu0, pg0) = (srv.cpu_ms()?, nodes::postgres_cpu_ms());
    let r = load_with_args(srv, key, args, move || {
        load::Req::post_owned(path.clone(), r#"{"variables":{"$n":3}}"#)
    })
    .await?;
    println!("POST /v2.0/actions/{{sid}}/runs accepted: {}", r.summary());
    // Every accepted run must finish: count them done, from the first request.
    let done = srv
        .wait_finished(&seed::RUNS_ENDED, Duration::from_secs(120))
        .await?;
    let took = t0.elapsed().as_secs_f64();
    println!(
        "  10-step runs completed: {done} in {took:.2} s = {:.0} runs/s end to end",
        done as f64 / took
    );
    println!(
        "  server CPU per run, request and steps: {:.0} us",
        cpu_per(srv, cpu0, u64::try_from(done).unwrap_or(0))?
    );
    if args.database_url.is_some() {
        println!(
            "  PostgreSQL CPU per run: {:.0} us",
            (nodes::postgres_cpu_ms() - pg0) * 1000.0 / done.max(1) as f64
        );
    }
    if let Some(p) = ping {
        println!(
            "  = {:.1}% of the ping rate in the same run",
            100.0 * r.rate() / p.rate()
        );
    }
    Ok(())
}

/// Signed webhook deliveries: the rate of `args.deliveries` events committed while the
/// server was down, then the delay of an event alone (20 top-ups in turn).
async fn webhooks(
    srv: &mut server::Server,
    binary: &std::path::Path,
    key: &str,
    args: &Args,
) -> anyhow::Result<()> {
    let recv = receiver::Receiver::start("bench-secret").await?;
    srv.post(
        key,
        "/v2.0/webhooks?type=billing.credit",
        &json!({"endpoint": recv.url, "options": {"hmac_secret": "bench-secret"}}),
    )
    .await?;
    let account = srv.account_sid()?;
    // Committed while the server is down, so the figure is the delivery rate alone, not
    // the pace of a slower seeding that the workers would follow.
    srv.stop().await?;
    let started = Instant::now();
    seed::events(&srv.database_url, &account, args.deliveries).await?;
    let seeded = started.elapsed();
    let t0 = Instant::now();
    srv.restart(binary).await?;
    recv.wait_for(args.deliveries, Duration::from_secs(300))
        .await?;
    let took = t0.elapsed();
    println!(
        "webhook deliveries (signed, verified by the receiver): {:.0}/s ({} in {:.2} s from the server's start; events committed beforehand in {:.2} s; {} bad signatures)",
        args.deliveries as f64 / took.as_secs_f64(),
        args.deliveries,
        took.as_secs_f64(),
        seeded.as_secs_f64(),
        recv.bad_signatures()
    );
    // The delay of an event alone: a top-up's `billing.credit`, one after the other.
    let mut alone = Vec::new();
    for _ in 0..20 {
        let before = recv.received();
        srv.top_up("1.00").await?;
        recv.wait_for(before + 1, Duration::from_secs(30)).await?;
        alone.push(recv.last_delay());
    }
    alone.sort_by(f64::total_cmp);
    println!(
        "  one event alone, cause to receiver: p50 {:.0} ms, max {:.0} ms (20 top-ups in turn)",
        alone[alone.len() / 2],
        alone[alone.len() - 1]
    );
    Ok(())
}

/// Stores `args.stored_sms` SMS for the search and console benchmarks, the server stopped.
async fn seed_stored_sms(
    srv: &mut server::Server,
    binary: &std::path::Path,
    args: &Args,
) -> anyhow::Result<()> {
    srv.stop().await?;
    let account = srv.account_sid()?;
    let started = Instant::now();
    seed::sms(&srv.database_url, &account, args.stored_sms).await?;
    println!(
        "seeded {} SMS in {:.1} s",
        args.stored_sms,
        started.elapsed().as_secs_f64()
    );
    srv.restart(binary).await
}

/// `GET /v2.0/sms` over `args.stored_sms` seeded SMS (a day, filtered by recipient), 8
/// connections for `args.seconds`, then one answer's counts.
async fn search(srv: &server::Server, key: &str, args: &Args) -> anyhow::Result<()> {
    let day = "createdAfter=2025-06-01T00:00:00Z&createdBefore=2025-06-02T00:00:00Z";
    let r = load::run(
        &srv.base,
        key,
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
            key,
            &format!("/v2.0/sms?direction=outbound&{day}&to=%2B33612000123"),
        )
        .await?;
    println!(
        "  (one answer: total {} hits {})",
        check["total"],
        check["hits"].as_array().map_or(0, Vec::len)
    );
    Ok(())
}

/// Waits in a gather for a minute: a call held by its scenario.
const HOLD_SCRIPT: &str = "branches:\n  inbound-call:\n    actions:\n      - action: say@v2\n        params: {what: Please hold}\n      - action: gather@v2\n        params: {maxDigits: 1, timeout: 60}\n";

/// `n` simulated inbound calls placed 64 at a time and held by their scenario: how fast they
/// are set up, and the server's resident memory per held call.
async fn held_calls(srv: &server::Server, key: &str, n: usize) -> anyhow::Result<()> {
    let number = srv.buy_number(key).await?;
    let scenario = srv
        .post(
            key,
            "/v2.0/actions",
            &json!({"name": "hold", "script": HOLD_SCRIPT}),
        )
        .await?;
    let sid = scenario["sid"].as_str().unwrap_or_default();
    let (status, _) = load::once_key(
        &srv.base,
        "PUT",
        &format!("/v2.0/actions/{sid}/numbers/{number}"),
        key,
        None,
    )
    .await?;
    anyhow::ensure!(status == 204, "attach: {status}");
    let rss_before = srv.rss_kb()?;
    let cpu0 = srv.cpu_ms()?;
    let t0 = Instant::now();
    let limit = std::sync::Arc::new(tokio::sync::Semaphore::new(64));
    let mut placed = tokio::task::JoinSet::new();
    for i in 0..n {
        let (base, key, limit) = (srv.base.clone(), key.to_owned(), limit.clone());
        let body = json!({"from": format!("+4477009{:05}", i % 100_000), "to": number}).to_string();
        placed.spawn(async move {
            let _permit = limit.acquire_owned().await?;
            let (status, call) =
                load::once_key(&base, "POST", "/sandbox/calls", &key, Some(&body)).await?;
            anyhow::ensure!(status == 201 || status == 200, "call: {status} {call}");
            Ok(call["status"] == "answered")
        });
    }
    let mut held = 0;
    while let Some(r) = placed.join_next().await {
        if r?? {
            held += 1;
        }
    }
    let took = t0.elapsed().as_secs_f64();
    let rss_after = srv.rss_kb()?;
    println!(
        "simulated inbound calls: {n} placed in {took:.2} s = {:.0} calls/s; {held} held in a gather at once; server CPU {:.0} us per call set up",
        n as f64 / took,
        cpu_per(srv, cpu0, n as u64)?
    );
    println!(
        "  server RSS {:.1} MB before, {:.1} MB with them held = {:.1} KB per held call",
        rss_before as f64 / 1024.0,
        rss_after as f64 / 1024.0,
        (rss_after.saturating_sub(rss_before)) as f64 / n.max(1) as f64
    );
    Ok(())
}

/// A calls export of `n` calls: how long the task takes, the download's rate, and the
/// server's peak resident memory (which must not grow with `n`).
async fn export(
    srv: &mut server::Server,
    binary: &std::path::Path,
    key: &str,
    n: u64,
) -> anyhow::Result<()> {
    srv.stop().await?;
    let account = srv.account_sid()?;
    let started = Instant::now();
    seed::calls(&srv.database_url, &account, n).await?;
    println!(
        "seeded {n} calls in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    srv.restart(binary).await?;
    let rss_before = srv.rss_kb()?;
    let t0 = Instant::now();
    let task = srv
        .post(
            key,
            "/v2.0/calls/export?direction=inbound&from=2025-05-14T00:00:00Z&to=2025-06-14T00:00:00Z",
            &json!(null),
        )
        .await?;
    let taskid = task["taskid"]
        .as_str()
        .ok_or_else(|| anyhow::anyhow!("no task: {task}"))?
        .to_owned();
    let done = loop {
        let t = srv.get(key, &format!("/v2.0/tasks/{taskid}")).await?;
        match t["status"].as_str() {
            Some("DONE") => break t,
            Some("ERROR" | "CANCELED") => anyhow::bail!("export ended: {t}"),
            _ => tokio::time::sleep(Duration::from_millis(50)).await,
        }
        anyhow::ensure!(t0.elapsed() < Duration::from_secs(600), "export too slow");
    };
    let task_took = t0.elapsed();
    let url = done["result"]["downloadUrl"]
        .as_str()
        .ok_or_else(|| anyhow::anyhow!("no URL: {done}"))?;
    let t1 = Instant::now();
    let path = url
        .strip_prefix(&srv.base)
        .ok_or_else(|| anyhow::anyhow!("the URL {url} is not on {}", srv.base))?;
    let (status, bytes, lines) = load::stream_get(&srv.base, path).await?;
    anyhow::ensure!(status == 200, "download: {status}");
    let download_took = t1.elapsed();
    anyhow::ensure!(lines == n + 1, "{lines} lines for {n} calls");
    println!(
        "calls export of {n} rows: task {:.1} s ({:.0} rows/s); download {:.1} MB in {:.2} s; server RSS {:.1} MB before, peak {:.1} MB",
        task_took.as_secs_f64(),
        n as f64 / task_took.as_secs_f64(),
        bytes as f64 / 1e6,
        download_took.as_secs_f64(),
        rss_before as f64 / 1024.0,
        srv.peak_rss_kb()? as f64 / 1024.0
    );
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
