//! Crash safety: loads the server with outbound SMS (`POST /v2.0/sms`) and inbound SMS
//! (`POST /sandbox/sms`) with webhooks subscribed, kills it with SIGKILL at random moments and
//! restarts it on the same database, then lets it drain and checks that nothing accepted was
//! lost: every SMS answered 2xx exists, every status history obeys the seed's table, every
//! event of those SMS reached the receiver at least once, and every delivery the receiver got
//! is of an event the database committed. With several nodes (PostgreSQL), clients go
//! round-robin over them, one node at a time is killed, and buyers race for numbers through
//! different nodes: no number may be sold twice.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use dialtone_domain::sms::SmsStatus;
use dialtone_store::params;
use serde_json::{Value, json};

use crate::{load, receiver, seed, server};

/// Calls every export task of the test must list, each exactly once.
const EXPORTED_CALLS: u64 = 20_000;
/// The export every task runs (the seeded calls' 30 days).
const EXPORT: &str =
    "/v2.0/calls/export?direction=inbound&from=2025-05-14T00:00:00Z&to=2025-06-14T00:00:00Z";

/// Runs the test; Err when anything was lost or broken.
pub async fn run(
    binary: &std::path::Path,
    pg: Option<&str>,
    kills: usize,
    nodes: usize,
) -> anyhow::Result<()> {
    anyhow::ensure!(
        nodes == 1 || pg.is_some(),
        "several nodes need --database-url (PostgreSQL)"
    );
    let mut srv = server::Server::start(binary, pg).await?;
    let key = srv.account("crash", "100000000.00").await?;
    // Calls for the export tasks that run through the kills (seeded with the server down).
    srv.stop().await?;
    seed::calls(&srv.database_url, &srv.account_sid()?, EXPORTED_CALLS).await?;
    srv.restart(binary).await?;
    let buyers = [
        srv.account("buyer-1", "100000000.00").await?,
        srv.account("buyer-2", "100000000.00").await?,
    ];
    let mut cluster = vec![];
    for _ in 1..nodes.max(1) {
        cluster.push(server::Server::join(binary, &srv.database_url).await?);
    }
    let reservation = srv
        .post(
            &key,
            "/v2.0/numbers/store?country=GB&type=mobile&quantity=1",
            &json!({}),
        )
        .await?;
    let token = reservation["token"].as_str().unwrap_or_default();
    let bought = srv
        .post(&key, &format!("/v2.0/numbers/store/{token}"), &json!({}))
        .await?;
    let number = bought["numbers"][0]["e164"]
        .as_str()
        .ok_or_else(|| anyhow::anyhow!("no number: {bought}"))?
        .to_owned();
    let recv = receiver::Receiver::start("crash-secret").await?;
    for t in ["sms.mt.status_update", "sms.mo"] {
        srv.post(
            &key,
            &format!("/v2.0/webhooks?type={t}"),
            &json!({"endpoint": recv.url, "options": {"hmac_secret": "crash-secret"}}),
        )
        .await?;
    }

    let mut bases = vec![srv.base.clone()];
    bases.extend(cluster.iter().map(|n| n.base.clone()));
    let base = Arc::new(RwLock::new(bases));
    let accepted = Arc::new(Mutex::new(Vec::<String>::new()));
    let bought = Arc::new(Mutex::new(Vec::<(usize, String)>::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let mut clients = tokio::task::JoinSet::new();
    for client in 0..8u32 {
        let (base, accepted, stop, key, number) = (
            base.clone(),
            accepted.clone(),
            stop.clone(),
            key.clone(),
            number.clone(),
        );
        clients.spawn(async move {
            let mut i = 0u32;
            while !stop.load(Ordering::Relaxed) {
                i += 1;
                let b = base
                    .read()
                    .map(|b| b[(client + i) as usize % b.len()].clone())
                    .unwrap_or_default();
                let answer = if client % 4 == 0 {
                    let body = json!({"from": "+447700900777", "to": number, "body": format!("in {client}.{i}")});
                    load::once_key(&b, "POST", "/sandbox/sms", &key, Some(&body.to_string())).await
                } else {
                    let to = format!("%2B33612{:06}", (client * 100_000 + i) % 1_000_000);
                    load::once_key(
                        &b,
                        "POST",
                        &format!("/v2.0/sms?to={to}"),
                        &key,
                        Some(r#"{"body":"crash test"}"#),
                    )
                    .await
                };
                match answer {
                    Ok((status, v)) if (200..300).contains(&status) => {
                        if let (Some(sid), Ok(mut a)) = (v["sid"].as_str(), accepted.lock()) {
                            a.push(sid.to_owned());
                        }
                    }
                    _ => tokio::time::sleep(Duration::from_millis(10)).await,
                }
            }
        });
    }

    for (buyer, key) in buyers.iter().enumerate() {
        let (base, bought, stop, key) = (base.clone(), bought.clone(), stop.clone(), key.clone());
        clients.spawn(async move {
            let mut i = 0usize;
            while !stop.load(Ordering::Relaxed) && i < 200 {
                i += 1;
                let node = |k: usize| {
                    base.read()
                        .map(|b| b[(buyer + k) % b.len()].clone())
                        .unwrap_or_default()
                };
                let Ok((200, r)) = load::once_key(
                    &node(i),
                    "POST",
                    "/v2.0/numbers/store?country=GB&type=mobile&quantity=1",
                    &key,
                    None,
                )
                .await
                else {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    continue;
                };
                let token = r["token"].as_str().unwrap_or_default().to_owned();
                // Buy through another node than the one that reserved.
                let path = format!("/v2.0/numbers/store/{token}");
                match load::once_key(&node(i + 1), "POST", &path, &key, None).await {
                    Ok((200, b)) => {
                        if let (Some(n), Ok(mut all)) =
                            (b["numbers"][0]["e164"].as_str(), bought.lock())
                        {
                            all.push((buyer, n.to_owned()));
                        }
                    }
                    _ => {
                        let _ = load::once_key(&node(i + 2), "DELETE", &path, &key, None).await;
                    }
                }
            }
        });
    }

    // One client starts an export task every 1.5 s, round-robin over the nodes (an account
    // may start 5 a day: they run through the first kills).
    let exports = Arc::new(Mutex::new(Vec::<String>::new()));
    {
        let (base, exports, stop, key) = (base.clone(), exports.clone(), stop.clone(), key.clone());
        clients.spawn(async move {
            let mut i = 0usize;
            while !stop.load(Ordering::Relaxed) {
                i += 1;
                let b = base
                    .read()
                    .map(|b| b[i % b.len()].clone())
                    .unwrap_or_default();
                if let Ok((202, t)) = load::once_key(&b, "POST", EXPORT, &key, None).await
                    && let (Some(id), Ok(mut all)) = (t["taskid"].as_str(), exports.lock())
                {
                    all.push(id.to_owned());
                }
                tokio::time::sleep(Duration::from_millis(1500)).await;
            }
        });
    }

    let started = Instant::now();
    let mut rng = 0x9E37_79B9u32;
    for k in 0..kills {
        rng ^= rng << 13;
        rng ^= rng >> 17;
        rng ^= rng << 5;
        tokio::time::sleep(Duration::from_millis(150 + u64::from(rng % 650))).await;
        let victim = k % nodes.max(1);
        let node = if victim == 0 {
            &mut srv
        } else {
            &mut cluster[victim - 1]
        };
        node.kill9()?;
        node.restart(binary).await?;
        if let Ok(mut b) = base.write() {
            b[victim].clone_from(&node.base);
        }
        println!("  kill {} of {kills} (node {victim}): restarted", k + 1);
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    stop.store(true, Ordering::Relaxed);
    while clients.join_next().await.is_some() {}
    let loaded = started.elapsed();

    // Drain: every SMS at rest and every delivery done (leases of killed nodes run out).
    let store = seed::open(&srv.database_url).await?;
    let t0 = Instant::now();
    loop {
        let busy = store
            .read(|c| {
                let sms = c
                    .query_one(
                        "SELECT COUNT(*) FROM sms WHERE next_at IS NOT NULL",
                        params![],
                    )?
                    .int(0)?;
                let hooks = c
                    .query_one(
                        "SELECT COUNT(*) FROM deliveries WHERE next_at IS NOT NULL",
                        params![],
                    )?
                    .int(0)?;
                let tasks = c
                    .query_one(
                        "SELECT COUNT(*) FROM tasks WHERE status IN ('PENDING', 'RUNNING')",
                        params![],
                    )?
                    .int(0)?;
                Ok::<_, dialtone_store::DbError>(sms + hooks + tasks)
            })
            .await?;
        if busy == 0 {
            break;
        }
        anyhow::ensure!(
            t0.elapsed() < Duration::from_secs(180),
            "{busy} SMS, deliveries or tasks never finished"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // The receiver may still be answering the last tries.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let drained = t0.elapsed();
    srv.stop().await?;
    for n in &mut cluster {
        n.stop().await?;
    }

    let accepted = accepted.lock().map(|a| a.clone()).unwrap_or_default();
    let rows = store
        .read(|c| {
            let sms = c.query("SELECT id, sid, status, direction, history FROM sms", params![])?;
            let events = c.query(
                "SELECT event_id, data FROM events WHERE type IN ('sms.mt.status_update', 'sms.mo')",
                params![],
            )?;
            Ok::<_, dialtone_store::DbError>((sms, events))
        })
        .await?;
    let (sms_rows, event_rows) = rows;
    let mut by_id = HashMap::new();
    let mut stored = HashMap::new();
    let mut history_rows = Vec::new();
    for r in &sms_rows {
        by_id.insert(r.int(0)?, r.text(1)?);
        stored.insert(r.text(1)?, (r.text(2)?, r.text(3)?));
        for change in dialtone_store::sms::parse_history(&r.text(4)?)? {
            history_rows.push((r.int(0)?, change.old_status, change.new_status));
        }
    }
    // 1. Every SMS answered 2xx exists.
    let lost: Vec<&String> = accepted
        .iter()
        .filter(|s| !stored.contains_key(*s))
        .collect();
    anyhow::ensure!(
        lost.is_empty(),
        "{} accepted SMS were lost: {:?}",
        lost.len(),
        &lost[..lost.len().min(5)]
    );
    // 2. Every history obeys the table and ends at the stored status.
    let mut last: HashMap<i64, String> = HashMap::new();
    for (id, old, new) in &history_rows {
        let (id, old, new) = (*id, old.clone(), new.clone());
        let (o, n) = (SmsStatus::parse(&old), SmsStatus::parse(&new));
        anyhow::ensure!(
            matches!((o, n), (Some(o), Some(n)) if o.may_become(n)),
            "SMS {:?} moved {old} -> {new}",
            by_id.get(&id)
        );
        if let Some(prev) = last.get(&id) {
            anyhow::ensure!(
                *prev == old,
                "SMS {:?} history skips from {prev} to {old}",
                by_id.get(&id)
            );
        }
        last.insert(id, new);
    }
    for (id, status) in &last {
        let sid = by_id.get(id).cloned().unwrap_or_default();
        let (current, _) = stored.get(&sid).cloned().unwrap_or_default();
        anyhow::ensure!(
            *status == current,
            "SMS {sid} history ends at {status}, stored {current}"
        );
    }
    // 3. Every event of the stored SMS reached the receiver; 4. nothing else did.
    let seen = recv.seen();
    let seen_ids: HashSet<&str> = seen.iter().map(|(e, _)| e.as_str()).collect();
    let mut committed = HashSet::new();
    let mut missing = 0usize;
    for r in &event_rows {
        let (event_id, data) = (r.text(0)?, r.text(1)?);
        let v: Value = serde_json::from_str(&data)?;
        let sid = v["hash"].as_str().unwrap_or_default().to_ascii_lowercase();
        anyhow::ensure!(
            stored.contains_key(&sid),
            "event {event_id} is of SMS {sid}, which does not exist"
        );
        if !seen_ids.contains(event_id.as_str()) {
            missing += 1;
        }
        committed.insert(event_id);
    }
    anyhow::ensure!(
        missing == 0,
        "{missing} committed events never reached the receiver"
    );
    let phantom = seen_ids.iter().filter(|e| !committed.contains(**e)).count();
    anyhow::ensure!(
        phantom == 0,
        "{phantom} deliveries were of events never committed"
    );
    // 5. No number sold twice, and each is the buyer's.
    let bought = bought.lock().map(|b| b.clone()).unwrap_or_default();
    let mut sold = HashSet::new();
    for (_, n) in &bought {
        anyhow::ensure!(sold.insert(n.clone()), "{n} was sold twice");
    }
    // 6. Every export task accepted finished, listing every call exactly once: no slice
    // was lost in a kill or written twice by two runners.
    let exports = exports.lock().map(|e| e.clone()).unwrap_or_default();
    let checked = check_exports(&store, &exports).await?;
    let mut tries = HashSet::new();
    let repeated_tries = seen.iter().filter(|t| !tries.insert((*t).clone())).count();
    // A claim uses up its try number, so even a try lost in a kill is never sent again
    // under the same number, by this node or another.
    anyhow::ensure!(
        repeated_tries == 0,
        "{repeated_tries} (event, try) pairs were delivered twice"
    );
    let unique_events = seen_ids.len();

    println!(
        "  {} numbers bought by 2 accounts racing through different nodes, none sold twice",
        bought.len()
    );
    println!(
        "  {checked} export tasks started through the kills, all DONE, each listing the {EXPORTED_CALLS} calls exactly once"
    );
    println!(
        "crash test ({nodes} node(s)): {kills} kills survived in {:.1} s of load; {} SMS answered 2xx, {} stored (the rest: committed, answer lost in a kill), none lost",
        loaded.as_secs_f64(),
        accepted.len(),
        stored.len()
    );
    println!(
        "  {} status moves checked against the seed's table; {} events committed, all {} delivered at least once ({} deliveries, {} (event, try) pairs sent twice); drained in {:.1} s",
        history_rows.len(),
        committed.len(),
        unique_events,
        seen.len(),
        repeated_tries,
        drained.as_secs_f64()
    );
    Ok(())
}

/// Reads each task's CSV back from its stored chunks: DONE, a header, and every seeded call
/// exactly once. Returns how many tasks were checked.
async fn check_exports(store: &dialtone_store::Store, taskids: &[String]) -> anyhow::Result<usize> {
    for taskid in taskids {
        let id = taskid.clone();
        let (status, chunks) = store
            .read(move |c| {
                let task = c.query_one(
                    "SELECT id, status FROM tasks WHERE taskid = $1",
                    params![id.as_str()],
                )?;
                let chunks = c.query(
                    "SELECT data FROM export_chunks WHERE task_id = $1 ORDER BY seq",
                    params![task.int(0)?],
                )?;
                let chunks = chunks
                    .iter()
                    .map(|r| r.blob(0))
                    .collect::<Result<Vec<_>, _>>()?;
                Ok::<_, dialtone_store::DbError>((task.text(1)?, chunks))
            })
            .await?;
        anyhow::ensure!(status == "DONE", "export task {taskid} ended {status}");
        let csv = String::from_utf8(chunks.concat())?;
        let mut lines = csv.lines();
        anyhow::ensure!(
            lines.next().is_some_and(|h| h.contains(',')),
            "export {taskid} has no header"
        );
        let mut seen = HashSet::new();
        for line in lines {
            let first = line.split(',').next().unwrap_or_default().to_owned();
            anyhow::ensure!(
                seen.insert(first.clone()),
                "export {taskid} lists {first} twice"
            );
        }
        anyhow::ensure!(
            seen.len() as u64 == EXPORTED_CALLS,
            "export {taskid} lists {} calls of {EXPORTED_CALLS}",
            seen.len()
        );
    }
    Ok(taskids.len())
}
