//! Filling the database directly, faster than the API could: SMS for the search benchmark
//! and events for the delivery benchmark.

use dialtone_domain::{Sid, Timestamp};
use dialtone_store::{DatabaseUrl, Store, StoreOptions, accounts, events, params};

pub(crate) async fn open(url: &str) -> anyhow::Result<Store> {
    let url = DatabaseUrl::parse(url).map_err(|e| anyhow::anyhow!(e))?;
    Ok(Store::open(&url, &StoreOptions::default()).await?)
}

/// Makes a fresh schema in the PostgreSQL database and returns a URL using it.
pub(crate) async fn fresh_schema(url: &str) -> anyhow::Result<String> {
    let name = format!("bench_{}", std::process::id());
    let store = open(url).await?;
    let n = name.clone();
    store
        .write(move |c| {
            c.batch(&format!(
                "DROP SCHEMA IF EXISTS {n} CASCADE; CREATE SCHEMA {n}"
            ))
        })
        .await?;
    let sep = if url.contains('?') { '&' } else { '?' };
    Ok(format!("{url}{sep}options=-csearch_path%3D{name}"))
}

/// Drops the schema [`fresh_schema`] made for this process.
pub(crate) async fn drop_schema(url: &str) -> anyhow::Result<()> {
    let name = format!("bench_{}", std::process::id());
    let store = open(url).await?;
    store
        .write(move |c| c.batch(&format!("DROP SCHEMA IF EXISTS {name} CASCADE")))
        .await?;
    Ok(())
}

async fn account_id(store: &Store, sid: &str) -> anyhow::Result<i64> {
    let sid = Sid::parse(sid).ok_or_else(|| anyhow::anyhow!("bad sid"))?;
    let a = store.read(move |c| accounts::by_sid(c, &sid)).await?;
    Ok(a.ok_or_else(|| anyhow::anyhow!("no account"))?.id)
}

/// Stores `n` delivered outbound SMS over 30 days from 2025-05-15, to 1000 recipients.
pub(crate) async fn sms(url: &str, account_sid: &str, n: u64) -> anyhow::Result<()> {
    let store = open(url).await?;
    let id = account_id(&store, account_sid).await?;
    let start = Timestamp::parse_rfc3339("2025-05-15T00:00:00Z")
        .map_err(|e| anyhow::anyhow!("{e}"))?
        .millis();
    let span = 30 * 86_400_000 / n.max(1) as i64;
    let batch = 10_000u64;
    let mut done = 0u64;
    while done < n {
        let from = done;
        let to = (done + batch).min(n);
        store
            .write(move |c| {
                // On PostgreSQL an SMS is its message and its state (migration 0036).
                let sql = match c.dialect() {
                    dialtone_store::Dialect::Postgres => {
                        "WITH m AS (INSERT INTO sms_message (sid, account_id, direction, sender, recipient, body, encoding, parts, \
                         traffic_type, billing_debit, carrier, created) \
                         VALUES ($1, $2, 'outbound', 'SMS', $3, 'Seeded benchmark message', 'gsm', 1, 'marketing', 450, 'simulated', $4) \
                         RETURNING id, account_id) \
                         INSERT INTO sms_state (sms_id, account_id, status, updated, sent_at, delivered_at) \
                         SELECT id, account_id, 'delivered', $4, $4, $4 FROM m"
                    }
                    dialtone_store::Dialect::Sqlite => {
                        "INSERT INTO sms (sid, account_id, direction, sender, recipient, body, encoding, parts, traffic_type, status, \
                         billing_debit, carrier, created, updated, sent_at, delivered_at) \
                         VALUES ($1, $2, 'outbound', 'SMS', $3, 'Seeded benchmark message', 'gsm', 1, 'marketing', 'delivered', 450, 'simulated', $4, $4, $4, $4)"
                    }
                };
                for i in from..to {
                    let created = start + i as i64 * span;
                    let sid = format!("s{i:07}");
                    c.execute(
                        sql,
                        params![sid, id, format!("+33612000{:03}", i % 1000), created],
                    )?;
                }
                Ok::<_, dialtone_store::DbError>(())
            })
            .await?;
        done = to;
    }
    analyze(&store, "sms_message").await?;
    analyze(&store, "sms_state").await
}

/// Gathers the planner's statistics of `table` on PostgreSQL, as its autovacuum does a while
/// after a bulk load (a page read before then is planned as if the table were empty).
async fn analyze(store: &Store, table: &'static str) -> anyhow::Result<()> {
    if store.dialect() == dialtone_store::Dialect::Postgres {
        store
            .write(move |c| c.batch(&format!("ANALYZE {table}")))
            .await?;
    }
    Ok(())
}

/// Stores `n` ended inbound calls to one number over 30 days from 2025-05-15.
pub(crate) async fn calls(url: &str, account_sid: &str, n: u64) -> anyhow::Result<()> {
    let store = open(url).await?;
    let id = account_id(&store, account_sid).await?;
    let start = Timestamp::parse_rfc3339("2025-05-15T00:00:00Z")
        .map_err(|e| anyhow::anyhow!("{e}"))?
        .millis();
    let span = 30 * 86_400_000 / n.max(1) as i64;
    let mut done = 0u64;
    while done < n {
        let (from, to) = (done, (done + 10_000).min(n));
        store
            .write(move |c| {
                for i in from..to {
                    let started = start + i as i64 * span;
                    c.execute(
                        "INSERT INTO calls (callid, account_id, direction, caller, callee, number, status, started, \
                         answered, ended, hangup_cause, hangup_source, billing_debit, updated) \
                         VALUES ($1, $2, 'inbound', $3, '+447700900001', '+447700900001', 'ended', $4, $5, $6, 16, 'caller', 1200, $6)",
                        params![format!("bench-call-{i:09}"), id, format!("+33612{:06}", i % 1_000_000), started, started + 3_000, started + 65_000],
                    )?;
                }
                Ok::<_, dialtone_store::DbError>(())
            })
            .await?;
        done = to;
    }
    Ok(())
}

/// Commits `n` `billing.credit` events (fanned out to the subscriptions) in batches.
pub(crate) async fn events(url: &str, account_sid: &str, n: u64) -> anyhow::Result<()> {
    let store = open(url).await?;
    let id = account_id(&store, account_sid).await?;
    let mut done = 0u64;
    while done < n {
        let count = (n - done).min(1000);
        store
            .write(move |c| {
                let now = Timestamp::now_system();
                for i in 0..count {
                    let data = format!(
                        r#"{{"amount":"{}.00","currency":"EUR","threshold":null}}"#,
                        done + i
                    );
                    events::emit(c, id, "billing.credit", &data, now)?;
                }
                Ok::<_, dialtone_store::DbError>(())
            })
            .await?;
        done += count;
    }
    Ok(())
}

/// Work whose end a benchmark waits for: the rows still at work, counted over and over
/// while it runs, and the rows done, counted once at the end.
pub(crate) struct Finish {
    /// What is counted, for messages.
    pub what: &'static str,
    /// The rows still at work (table and filter), served by a partial index (a count of
    /// every row took 8 ms of PostgreSQL at each poll, beside the load it measured).
    pub pending: &'static str,
    /// The rows done (table and filter).
    pub done: &'static str,
}

/// Every run has ended.
pub(crate) const RUNS_ENDED: Finish = Finish {
    what: "runs",
    pending: "runs WHERE status = 'running'",
    done: "runs WHERE status <> 'running'",
};

/// Every outbound SMS went through its timetable (nothing left due).
pub(crate) const SMS_SETTLED: Finish = Finish {
    what: "SMS",
    // A subquery per queue row, not a join: PostgreSQL planned the join as a hash join over
    // all of `sms`, 54 ms at each poll (a tenth of the database's CPU while SMS settled);
    // this stops at the first outbound SMS still queued.
    pending: "sms_queue q WHERE (SELECT direction FROM sms WHERE sms.id = q.sms_id) = 'outbound'",
    done: "sms WHERE next_at IS NULL AND direction = 'outbound'",
};

/// Records that a console feed watches the account `account_sid` for the next hour (its
/// events nobody receives are then written, and its SMS not planned).
pub(crate) async fn watch(url: &str, account_sid: &str) -> anyhow::Result<()> {
    let store = open(url).await?;
    let sid = Sid::parse(account_sid).ok_or_else(|| anyhow::anyhow!("a bad account sid"))?;
    let until = Timestamp::now_system().plus_ms(3_600_000);
    store
        .write(move |c| {
            let account = accounts::by_sid(c, &sid)?
                .ok_or_else(|| dialtone_store::DbError::Other("no such account".into()))?;
            events::watch(c, account.id, until)
        })
        .await?;
    Ok(())
}

/// The id of the newest SMS (0 without any).
pub(crate) async fn newest_sms(store: &Store) -> anyhow::Result<i64> {
    let row = store
        .read(|c| c.query_one("SELECT COALESCE(max(id), 0) FROM sms", params![]))
        .await?;
    Ok(row.int(0)?)
}

/// The SMS after `id` planned to their delivery (table and filter): still to come at
/// `after` when given.
pub(crate) fn planned_after(id: i64, after: Option<Timestamp>) -> String {
    let after = after.map_or(i64::MIN, Timestamp::millis);
    format!("sms WHERE id > {id} AND plan_delivered_at > {after}")
}

/// Waits until the planned delivery of the newest outbound SMS has come, when it has one;
/// says whether it had.
pub(crate) async fn wait_planned(store: &Store) -> anyhow::Result<bool> {
    let row = store
        .read(|c| {
            c.query_opt(
                "SELECT plan_delivered_at FROM sms WHERE direction = 'outbound' \
                 ORDER BY id DESC LIMIT 1",
                params![],
            )
        })
        .await?;
    let Some(at) = row.map(|r| r.opt_int(0)).transpose()?.flatten() else {
        return Ok(false);
    };
    let wait = at - Timestamp::now_system().millis();
    if wait > 0 {
        tokio::time::sleep(std::time::Duration::from_millis(wait.unsigned_abs())).await;
    }
    Ok(true)
}

/// Whether the database holds any row of `from` (a table and its filter): the poll of a
/// wait, which stops at the first row still at work instead of counting them all (a count
/// took 24-31 ms of PostgreSQL at each poll near the end of an SMS run, beside the work
/// measured).
pub(crate) async fn any(store: &Store, from: &str) -> anyhow::Result<bool> {
    let sql = format!("SELECT EXISTS (SELECT 1 FROM {from})");
    let row = store.read(move |c| c.query_one(&sql, params![])).await?;
    Ok(row.bool(0)?)
}

/// How many rows of `from` (a table and its filter) the database holds.
pub(crate) async fn count(store: &Store, from: &str) -> anyhow::Result<i64> {
    let sql = format!("SELECT COUNT(*) FROM {from}");
    let row = store.read(move |c| c.query_one(&sql, params![])).await?;
    Ok(row.int(0)?)
}

/// Waits until every row of `finish` is done in the database of `store` (one connection set
/// for the whole wait: polls must not open the database again); returns how many there are.
pub(crate) async fn wait_finished(
    store: &Store,
    finish: &Finish,
    limit: std::time::Duration,
) -> anyhow::Result<i64> {
    let t0 = std::time::Instant::now();
    loop {
        if !any(store, finish.pending).await? {
            return count(store, finish.done).await;
        }
        if t0.elapsed() >= limit {
            let pending = count(store, finish.pending).await?;
            anyhow::bail!("{pending} {} still unfinished", finish.what);
        }
        // Not more often: on PostgreSQL even the indexed look-up walks the dead entries
        // the moves leave in the due index, load beside the load measured; 250 ms is
        // within 1% of the times measured here.
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    }
}
