//! SMPP benchmark: sustained `submit_sm` per second through one transceiver bind with a
//! window, against the test SMSC (crates/carrier/tests/smsc/smsc.py, on the smpp34 package)
//! on loopback. Each submit waits for its `submit_sm_resp`; the window bounds those in flight.
//!
//! `cargo run --release -p dialtone-bench --bin smpp -- [--seconds 10] [--window 10,64]
//!  [--throughput 0]`

use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use clap::Parser;
use dialtone_carrier::OutboundSms;
use dialtone_carrier::smpp::{Smpp, SmppConfig};
use dialtone_domain::sms::Encoding;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::sync::mpsc;

/// Options of the SMPP benchmark.
#[derive(Debug, Parser)]
struct Args {
    /// Seconds per measurement.
    #[arg(long, default_value_t = 10)]
    seconds: u64,
    /// Window sizes to measure (requests awaiting their response at once).
    #[arg(long, value_delimiter = ',', default_value = "1,10,64")]
    window: Vec<u32>,
    /// The connector's throughput limit in submits per second (0: none).
    #[arg(long, default_value_t = 0)]
    throughput: u32,
    /// Python with smpp34 installed.
    #[arg(long, default_value = "python3")]
    python: String,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../crates/carrier/tests/smsc/smsc.py");
    let mut smsc = tokio::process::Command::new(&args.python)
        .arg(&script)
        .arg(port.to_string())
        .arg("--quiet")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| anyhow::anyhow!("cannot start the test SMSC ({}): {e}", args.python))?;
    let stdout = smsc
        .stdout
        .take()
        .ok_or_else(|| anyhow::anyhow!("no stdout"))?;
    let mut lines = BufReader::new(stdout).lines();
    let ready = tokio::time::timeout(Duration::from_secs(10), lines.next_line()).await;
    if !matches!(ready, Ok(Ok(Some(ref l))) if l.contains("ready")) {
        anyhow::bail!("the test SMSC did not start: is smpp34 installed (pip install smpp34)?");
    }
    // Keep reading its reports so its pipe never fills.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });

    println!(
        "dialtone SMPP benchmark: {} cores, smpp34 test SMSC on 127.0.0.1:{port}, {} s per figure, throughput limit {}",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        args.seconds,
        if args.throughput == 0 {
            "none".to_owned()
        } else {
            format!("{}/s", args.throughput)
        }
    );
    for &window in &args.window {
        let (rate, p50, p99, errors) = measure(port, window, &args).await?;
        println!(
            "window {window:>3}: {rate:>8.0} submit_sm/s   latency p50 {p50:>6.2} ms  p99 {p99:>6.2} ms   refused {errors}"
        );
    }
    Ok(())
}

async fn measure(port: u16, window: u32, args: &Args) -> anyhow::Result<(f64, f64, f64, u64)> {
    let mut config = SmppConfig::new("bench", "127.0.0.1", port, "bench", "bench");
    config.window = window;
    config.throughput = args.throughput;
    let (tx, _rx) = mpsc::channel(1024);
    let smpp = Smpp::start(config, tx);
    if !smpp.wait_bound(Duration::from_secs(10)).await {
        anyhow::bail!("no bind");
    }
    let sms = Arc::new(OutboundSms {
        sid: "bench".into(),
        from: "+447700900000".into(),
        // Ends in 7: accepted without a receipt.
        to: "+33600000007".into(),
        parts: vec!["Benchmark message".into()],
        encoding: Encoding::Gsm,
        flash: false,
        reference: 0,
    });
    let deadline = Instant::now() + Duration::from_secs(args.seconds);
    let errors = Arc::new(AtomicU64::new(0));
    // Twice the window in submitters keeps the window full.
    let tasks: Vec<_> = (0..window * 2)
        .map(|_| {
            let (smpp, sms, errors) = (smpp.clone(), sms.clone(), errors.clone());
            tokio::spawn(async move {
                let mut latencies = Vec::new();
                while Instant::now() < deadline {
                    let started = Instant::now();
                    match smpp.submit(&sms).await {
                        Ok(_) => latencies.push(started.elapsed()),
                        Err(_) => {
                            errors.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
                latencies
            })
        })
        .collect();
    let started = Instant::now();
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await?);
    }
    let elapsed = started.elapsed().as_secs_f64();
    smpp.stop().await;
    all.sort();
    let pct = |p: f64| {
        all.get(((all.len() as f64 * p) as usize).min(all.len().saturating_sub(1)))
            .map_or(0.0, |d| d.as_secs_f64() * 1000.0)
    };
    Ok((
        all.len() as f64 / elapsed,
        pct(0.50),
        pct(0.99),
        errors.load(Ordering::Relaxed),
    ))
}
