//! Pruning what a long-running deployment would otherwise keep forever: old events with
//! their webhook deliveries and tries, finished runs, export files. Each call deletes at
//! most a window of the oldest rows (by key: rows are made in time order), so it costs a
//! short index scan whatever the table's size, and the worker calls it again while it finds
//! work.

use dialtone_domain::Timestamp;

use crate::params;
use crate::sql::{Conn, DbError, Value};

/// Rows looked at per table per call.
const WINDOW: i64 = 1_000;

/// How much a pass deleted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Pruned {
    /// Webhook deliveries (their tries go with them).
    pub deliveries: usize,
    /// Events.
    pub events: usize,
    /// Finished runs.
    pub runs: usize,
    /// Export files (their chunks).
    pub exports: usize,
}

impl Pruned {
    /// Rows deleted in all.
    pub fn total(&self) -> usize {
        self.deliveries + self.events + self.runs + self.exports
    }
}

/// Deletes `ids` from `table`; how many.
fn delete_ids(
    conn: &mut dyn Conn,
    table: &str,
    column: &str,
    ids: &[i64],
) -> Result<usize, DbError> {
    let mut deleted = 0;
    for chunk in ids.chunks(100) {
        let params: Vec<Value> = chunk.iter().map(|id| (*id).into()).collect();
        deleted += conn.execute(
            &format!(
                "DELETE FROM {table} WHERE {column} IN ({})",
                crate::sql::placeholders(1, chunk.len())
            ),
            &params,
        )? as usize;
    }
    Ok(deleted)
}

/// The ids among the oldest [`WINDOW`] rows of `table` whose `column` is before `cutoff`
/// (and that match `extra`).
fn old_ids(
    conn: &mut dyn Conn,
    table: &str,
    column: &str,
    extra: &str,
    cutoff: Timestamp,
) -> Result<Vec<i64>, DbError> {
    conn.query(
        &format!(
            "SELECT id FROM (SELECT id, {column} AS at{extra_cols} FROM {table} ORDER BY id LIMIT {WINDOW}) w \
             WHERE w.at < $1{extra}",
            extra_cols = if extra.is_empty() { "" } else { ", status" },
        ),
        params![cutoff],
    )?
    .iter()
    .map(|r| r.int(0))
    .collect()
}

/// Deletes events (with their deliveries and tries) made before `events_before`, runs that
/// ended before `runs_before`, and the export files of tasks that ended before
/// `exports_before`; at most a window of each.
pub fn prune(
    conn: &mut dyn Conn,
    events_before: Timestamp,
    runs_before: Timestamp,
    exports_before: Timestamp,
) -> Result<Pruned, DbError> {
    let mut pruned = Pruned::default();
    let deliveries = old_ids(conn, "deliveries", "created", "", events_before)?;
    pruned.deliveries = delete_ids(conn, "deliveries", "id", &deliveries)?;
    let events = old_ids(conn, "events", "created", "", events_before)?;
    // An event a delivery still refers to (a newer delivery of an old event) stays.
    let mut free = Vec::with_capacity(events.len());
    for id in events {
        let referred = conn
            .query_opt(
                "SELECT 1 FROM deliveries WHERE event_id = $1 LIMIT 1",
                params![id],
            )?
            .is_some();
        if !referred {
            free.push(id);
        }
    }
    pruned.events = delete_ids(conn, "events", "id", &free)?;
    let runs = old_ids(
        conn,
        "runs",
        "COALESCE(ended, updated)",
        " AND w.status <> 'running'",
        runs_before,
    )?;
    pruned.runs = delete_ids(conn, "runs", "id", &runs)?;
    // The oldest tasks that still have a file: a file goes once its task ended long enough.
    let with_files: Vec<(i64, String, Timestamp)> = conn
        .query(
            &format!(
                "SELECT t.id, t.status, t.updated FROM tasks t \
                 JOIN (SELECT DISTINCT task_id FROM export_chunks ORDER BY task_id LIMIT {WINDOW}) c \
                 ON c.task_id = t.id"
            ),
            params![],
        )?
        .iter()
        .map(|r| Ok((r.int(0)?, r.text(1)?, r.timestamp(2)?)))
        .collect::<Result<_, DbError>>()?;
    let expired: Vec<i64> = with_files
        .into_iter()
        .filter(|(_, status, updated)| {
            status != "RUNNING" && status != "PENDING" && *updated < exports_before
        })
        .map(|(id, _, _)| id)
        .collect();
    delete_ids(conn, "export_chunks", "task_id", &expired)?;
    pruned.exports = expired.len();
    Ok(pruned)
}
