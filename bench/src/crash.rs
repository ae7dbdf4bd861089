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
use tokio::task::JoinSet;

use crate::{load, receiver, seed, server};

/// Calls every export task of the test must list, each exactly once.
const EXPORTED_CALLS: u64 = 20_000;
/// The export every task runs (the seeded calls' 30 days).
const EXPORT: &str =
    "/v2.0/calls/export?direction=inbound&from=2025-05-14T00:00:00Z&to=2025-06-14T00:00:00Z";

/// Runs the test; Err when anything was lost or broken.
pub(crate) async fn run(
    binary: &std::path::Path,
    pg: Option<&str>,
    kills: usize,
    nodes: usize,
) -> anyhow::Result<()> {
    anyhow::ensure!(
        nodes == 1 || pg.is_some(),
        "several nodes need --database-url (PostgreSQL)"
    );
    let Setup {
        mut srv,
        mut cluster,
        key,
        buyers,
        number,
        recv,
    } = setup(binary, pg, nodes).await?;

    let shared = Shared::new(&srv, &cluster);
    let mut clients = JoinSet::new();
    shared.spawn_sms_clients(&mut clients, &key, &number);
    shared.spawn_buyers(&mut clients, &buyers);
    shared.spawn_exporter(&mut clients, &key);

    let started = Instant::now();
    kill_loop(binary, &mut srv, &mut cluster, &shared.bases, kills, nodes).await?;
    tokio::time::sleep(Duration::from_millis(300)).await;
    shared.stop.store(true, Ordering::Relaxed);
    while clients.join_next().await.is_some() {}
    let loaded = started.elapsed();

    let store = seed::open(&srv.database_url).await?;
    let drained = drain(&store).await?;
    srv.stop().await?;
    for n in &mut cluster {
        n.stop().await?;
    }

    let summary = check(&store, &shared, &recv).await?;
    summary.print(nodes, kills, loaded, drained);
    Ok(())
}

/// The servers, accounts, number and receiver of the test, before the load.
struct Setup {
    /// The first node (the one that made the database).
    srv: server::Server,
    /// The other nodes, joined on the same database.
    cluster: Vec<server::Server>,
    /// The API key of the account sending and receiving SMS.
    key: String,
    /// The API keys of the two accounts racing for numbers.
    buyers: [String; 2],
    /// The number bought for the inbound SMS.
    number: String,
    /// The webhook receiver, subscribed to the SMS events.
    recv: receiver::Receiver,
}

/// Starts the server, seeds the calls the export tasks list, makes the accounts, joins the
/// other nodes, buys the number of the inbound SMS and subscribes the receiver to the SMS
/// events.
async fn setup(binary: &std::path::Path, pg: Option<&str>, nodes: usize) -> anyhow::Result<Setup> {
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
    Ok(Setup {
        srv,
        cluster,
        key,
        buyers,
        number,
        recv,
    })
}

/// What the load clients share with the test: the nodes to call, what the server accepted,
/// and the signal to stop.
struct Shared {
    /// Each node's base URL, updated when the node is restarted.
    bases: Arc<RwLock<Vec<String>>>,
    /// The SIDs of the SMS answered 2xx.
    accepted: Arc<Mutex<Vec<String>>>,
    /// The numbers bought, each with its buyer's index.
    bought: Arc<Mutex<Vec<(usize, String)>>>,
    /// The task ids of the export tasks started.
    exports: Arc<Mutex<Vec<String>>>,
    /// Set when the clients must stop.
    stop: Arc<AtomicBool>,
}

impl Shared {
    /// The state of a load on `srv` and the `cluster`'s nodes, nothing accepted yet.
    fn new(srv: &server::Server, cluster: &[server::Server]) -> Self {
        let mut bases = vec![srv.base.clone()];
        bases.extend(cluster.iter().map(|n| n.base.clone()));
        Self {
            bases: Arc::new(RwLock::new(bases)),
            accepted: Arc::new(Mutex::new(Vec::new())),
            bought: Arc::new(Mutex::new(Vec::new())),
            exports: Arc::new(Mutex::new(Vec::new())),
            stop: Arc::new(AtomicBool::new(false)),
        }
    }

    /// Spawns 8 SMS clients round-robin over the nodes until stopped: every fourth sends
    /// inbound SMS to `number`, the others outbound SMS; each SID answered 2xx is recorded.
    fn spawn_sms_clients(&self, clients: &mut JoinSet<()>, key: &str, number: &str) {
        for client in 0..8u32 {
            let (base, accepted, stop, key, number) = (
                self.bases.clone(),
                self.accepted.clone(),
                self.stop.clone(),
                key.to_owned(),
                number.to_owned(),
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
                        load::once_key(&b, "POST", "/sandbox/sms", &key, Some(&body.to_string()))
                            .await
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
    }

    /// Spawns a number buyer per key in `buyers`, each making up to 200 attempts until
    /// stopped: reserve a number through one node, buy it through the next (or cancel the
    /// reservation through a third); each number bought is recorded with its buyer.
    fn spawn_buyers(&self, clients: &mut JoinSet<()>, buyers: &[String]) {
        for (buyer, key) in buyers.iter().enumerate() {
            let (base, bought, stop, key) = (
                self.bases.clone(),
                self.bought.clone(),
                self.stop.clone(),
                key.clone(),
            );
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
    }

    /// Spawns the client that starts an export task every 1.5 s, round-robin over the nodes
    /// (an account may start 5 a day: they run through the first kills), until stopped; each
    /// task id accepted is recorded.
    fn spawn_exporter(&self, clients: &mut JoinSet<()>, key: &str) {
        let (base, exports, stop, key) = (
            self.bases.clone(),
            self.exports.clone(),
            self.stop.clone(),
            key.to_owned(),
        );
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
}

/// Kills a node with SIGKILL `kills` times at random moments (150 to 800 ms apart), one node
/// at a time in turn, restarting it on the same database and updating its base in `bases`.
async fn kill_loop(
    binary: &std::path::Path,
    srv: &mut server::Server,
    cluster: &mut [server::Server],
    bases: &RwLock<Vec<String>>,
    kills: usize,
    nodes: usize,
) -> anyhow::Result<()> {
    let mut rng = 0x9E37_79B9u32;
    for k in 0..kills {
        rng ^= rng << 13;
        rng ^= rng >> 17;
        rng ^= rng << 5;
        tokio::time::sleep(Duration::from_millis(150 + u64::from(rng % 650))).await;
        let victim = k % nodes.max(1);
        let node = if victim == 0 {
            &mut *srv
        } else {
            &mut cluster[victim - 1]
        };
        node.kill9()?;
        node.restart(binary).await?;
        if let Ok(mut b) = bases.write() {
            b[victim].clone_from(&node.base);
        }
        println!("  kill {} of {kills} (node {victim}): restarted", k + 1);
    }
    Ok(())
}

/// Waits until every SMS is at rest, every delivery done and every task finished (leases of
/// killed nodes run out), then a little more for the receiver's last answers. Returns how
/// long it took; Err after 180 s.
async fn drain(store: &dialtone_store::Store) -> anyhow::Result<Duration> {
    let t0 = Instant::now();
    loop {
        let busy = store
            .read(|c| {
                let sms = c
                    .query_one("SELECT COUNT(*) FROM sms_queue", params![])?
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
    Ok(t0.elapsed())
}

/// The SMS stored once drained.
struct StoredSms {
    /// Each SMS's SID by its row id.
    by_id: HashMap<i64, String>,
    /// Each SMS's status and direction by its SID.
    stored: HashMap<String, (String, String)>,
    /// Every status move: the SMS's row id, the old status and the new one.
    history_rows: Vec<(i64, String, String)>,
}

/// Reads every SMS stored (with its status history) and every SMS event committed.
async fn read_stored(
    store: &dialtone_store::Store,
) -> anyhow::Result<(StoredSms, Vec<dialtone_store::Row>)> {
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
    let sms = StoredSms {
        by_id,
        stored,
        history_rows,
    };
    Ok((sms, event_rows))
}

/// The figures of a test that passed its checks.
struct Summary {
    /// The SMS answered 2xx.
    accepted: usize,
    /// The SMS stored.
    stored: usize,
    /// The status moves checked.
    moves: usize,
    /// The SMS events committed.
    committed: usize,
    /// The events the receiver got at least once.
    unique_events: usize,
    /// The deliveries the receiver got.
    deliveries: usize,
    /// The (event, try) pairs delivered more than once.
    repeated_tries: usize,
    /// The numbers bought.
    bought: usize,
    /// The export tasks checked.
    exports: usize,
}

impl Summary {
    /// Prints the figures, with the test's `nodes`, `kills` and the durations of the load and
    /// of the drain.
    fn print(&self, nodes: usize, kills: usize, loaded: Duration, drained: Duration) {
        println!(
            "  {} numbers bought by 2 accounts racing through different nodes, none sold twice",
            self.bought
        );
        println!(
            "  {} export tasks started through the kills, all DONE, each listing the {EXPORTED_CALLS} calls exactly once",
            self.exports
        );
        println!(
            "crash test ({nodes} node(s)): {kills} kills survived in {:.1} s of load; {} SMS answered 2xx, {} stored (the rest: committed, answer lost in a kill), none lost",
            loaded.as_secs_f64(),
            self.accepted,
            self.stored
        );
        println!(
            "  {} status moves checked against the seed's table; {} events committed, all {} delivered at least once ({} deliveries, {} (event, try) pairs sent twice); drained in {:.1} s",
            self.moves,
            self.committed,
            self.unique_events,
            self.deliveries,
            self.repeated_tries,
            drained.as_secs_f64()
        );
    }
}

/// Checks the drained database and the receiver against what the clients recorded: no
/// accepted SMS lost, every history valid, every event delivered and nothing else, no number
/// sold twice, every export complete, no try sent twice. Returns the figures.
async fn check(
    store: &dialtone_store::Store,
    shared: &Shared,
    recv: &receiver::Receiver,
) -> anyhow::Result<Summary> {
    let accepted = shared
        .accepted
        .lock()
        .map(|a| a.clone())
        .unwrap_or_default();
    let (sms, event_rows) = read_stored(store).await?;
    // 1. Every SMS answered 2xx exists.
    check_lost(&accepted, &sms.stored)?;
    // 2. Every history obeys the table and ends at the stored status.
    check_history(&sms)?;
    // 3. Every event of the stored SMS reached the receiver; 4. nothing else did.
    let seen = recv.seen();
    let seen_ids: HashSet<&str> = seen.iter().map(|(e, _)| e.as_str()).collect();
    let committed = check_events(&event_rows, &sms.stored, &seen_ids)?;
    // 5. No number sold twice, and each is the buyer's.
    let bought = shared.bought.lock().map(|b| b.clone()).unwrap_or_default();
    check_numbers(&bought)?;
    // 6. Every export task accepted finished, listing every call exactly once: no slice
    // was lost in a kill or written twice by two runners.
    let exports = shared.exports.lock().map(|e| e.clone()).unwrap_or_default();
    let checked = check_exports(store, &exports).await?;
    let repeated_tries = check_tries(&seen)?;
    Ok(Summary {
        accepted: accepted.len(),
        stored: sms.stored.len(),
        moves: sms.history_rows.len(),
        committed,
        unique_events: seen_ids.len(),
        deliveries: seen.len(),
        repeated_tries,
        bought: bought.len(),
        exports: checked,
    })
}

/// Err when an SMS answered 2xx (`accepted`) is not `stored`.
fn check_lost(
    accepted: &[String],
    stored: &HashMap<String, (String, String)>,
) -> anyhow::Result<()> {
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
    Ok(())
}

/// Err when a status move breaks the table, a history skips a status, or a history does not
/// end at the stored status.
fn check_history(sms: &StoredSms) -> anyhow::Result<()> {
    let StoredSms {
        by_id,
        stored,
        history_rows,
    } = sms;
    let mut last: HashMap<i64, String> = HashMap::new();
    for (id, old, new) in history_rows {
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
    Ok(())
}

/// Err when a committed event is of an SMS not stored, never reached the receiver
/// (`seen_ids`), or when the receiver got an event never committed. Returns how many events
/// were committed.
fn check_events(
    event_rows: &[dialtone_store::Row],
    stored: &HashMap<String, (String, String)>,
    seen_ids: &HashSet<&str>,
) -> anyhow::Result<usize> {
    let mut committed = HashSet::new();
    let mut missing = 0usize;
    for r in event_rows {
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
    Ok(committed.len())
}

/// Err when a number was `bought` twice.
fn check_numbers(bought: &[(usize, String)]) -> anyhow::Result<()> {
    let mut sold = HashSet::new();
    for (_, n) in bought {
        anyhow::ensure!(sold.insert(n.clone()), "{n} was sold twice");
    }
    Ok(())
}

/// Err when an (event, try) pair of the receiver's deliveries (`seen`) came twice: a claim
/// uses up its try number, so even a try lost in a kill is never sent again under the same
/// number, by this node or another. Returns how many came twice (0).
fn check_tries(seen: &[(String, i64)]) -> anyhow::Result<usize> {
    let mut tries = HashSet::new();
    let repeated_tries = seen.iter().filter(|t| !tries.insert((*t).clone())).count();
    anyhow::ensure!(
        repeated_tries == 0,
        "{repeated_tries} (event, try) pairs were delivered twice"
    );
    Ok(repeated_tries)
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
