//! `POST /v2.0/sms` through several nodes on one PostgreSQL (`--only nodes --nodes N
//! --database-url ...`): the connections split evenly over the nodes, all sending for one
//! account, and then the aggregate accepted rate, each node's CPU per accepted SMS and the
//! database's (every `postgres` process of this machine, from `/proc`), the figures a
//! projection to more nodes starts from.

use std::time::Duration;

use crate::{load, server};

/// CPU time of every `postgres` process of this machine, in milliseconds.
pub(crate) fn postgres_cpu_ms() -> f64 {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return 0.0;
    };
    dir.flatten()
        .filter_map(|entry| std::fs::read_to_string(entry.path().join("stat")).ok())
        .filter(|stat| stat.contains(" (postgres) "))
        .filter_map(|stat| server::stat_cpu_ms(&stat).ok())
        .sum()
}

/// Starts `nodes` nodes on a fresh schema of `url`, loads them with `connections` in all for
/// `seconds`, and prints the aggregate and per-node figures.
pub(crate) async fn run(
    binary: &std::path::Path,
    url: &str,
    nodes: usize,
    connections: usize,
    seconds: u64,
) -> anyhow::Result<()> {
    let mut first = server::Server::start(binary, Some(url)).await?;
    let key = first.account("nodes", "100000000.00").await?;
    let mut cluster = vec![first];
    for _ in 1..nodes.max(1) {
        let joined = server::Server::join(binary, &cluster[0].database_url).await?;
        cluster.push(joined);
    }
    let per_node = (connections / cluster.len()).max(1);
    let cpu0: Vec<f64> = cluster
        .iter()
        .map(server::Server::cpu_ms)
        .collect::<anyhow::Result<_>>()?;
    let pg0 = postgres_cpu_ms();
    let tasks: Vec<_> = cluster
        .iter()
        .map(|srv| {
            let (base, key) = (srv.base.clone(), key.clone());
            tokio::spawn(async move {
                load::run(&base, &key, per_node, Duration::from_secs(seconds), || {
                    load::Req::post(
                        "/v2.0/sms?to=%2B447700900555",
                        r#"{"body":"Benchmark message"}"#,
                    )
                })
                .await
            })
        })
        .collect();
    let mut reports = Vec::with_capacity(tasks.len());
    for t in tasks {
        reports.push(t.await??);
    }
    let pg_ms = postgres_cpu_ms() - pg0;
    let total: u64 = reports.iter().map(load::Report::count).sum();
    let rate: f64 = reports.iter().map(load::Report::rate).sum();
    println!(
        "POST /v2.0/sms through {} node(s), {per_node} connections each: {rate:.0} accepted/s in all ({total} in {seconds} s)",
        cluster.len()
    );
    for (i, (srv, r)) in cluster.iter().zip(&reports).enumerate() {
        let cpu = srv.cpu_ms()? - cpu0[i];
        println!(
            "  node {i}: {}; server CPU per accepted SMS {:.0} us",
            r.summary(),
            cpu * 1000.0 / r.count().max(1) as f64
        );
    }
    println!(
        "  PostgreSQL CPU per accepted SMS: {:.0} us ({:.2} cores)",
        pg_ms * 1000.0 / total.max(1) as f64,
        pg_ms / 1000.0 / seconds as f64
    );
    for mut srv in cluster {
        srv.stop().await?;
    }
    Ok(())
}
