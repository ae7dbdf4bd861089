//! Tasks: background jobs of an account (call exports, bulk recording changes) on the same
//! leased work queue as every other worker. A task advances in slices; each slice commits its
//! output with its cursor, so a crash repeats nothing and loses nothing, and a cancel takes
//! effect at the next slice (the safe point).

use dialtone_domain::{Sid, Timestamp};

use crate::params;
use crate::sql::{Conn, DbError, Dialect};

/// A task.
#[derive(Debug, Clone, PartialEq)]
pub struct Task {
    /// Internal key.
    pub id: i64,
    /// Public id.
    pub taskid: String,
    /// Owner.
    pub account_id: i64,
    /// `calls-export`, `recordings-update` or `recordings-delete`.
    pub kind: String,
    /// `PENDING`, `RUNNING`, `DONE`, `ERROR` or `CANCELED`.
    pub status: String,
    /// What to do (JSON).
    pub params: String,
    /// Where the next slice starts (an id).
    pub cursor: i64,
    /// Items done.
    pub done: i64,
    /// Items in all.
    pub total: i64,
    /// Result (JSON), once DONE.
    pub result: Option<String>,
    /// Why it failed.
    pub error: Option<String>,
    /// A cancel waits for the next safe point.
    pub cancel_requested: bool,
    /// Creation.
    pub created: Timestamp,
    /// Last change.
    pub updated: Timestamp,
}

crate::row_decoder! {
    const COLUMNS; fn from_row -> Task {
        id: int("id"),
        taskid: text("taskid"),
        account_id: int("account_id"),
        kind: text("type"),
        status: text("status"),
        params: text("params"),
        cursor: int("cursor"),
        done: int("done"),
        total: int("total"),
        result: opt_text("result"),
        error: opt_text("error"),
        cancel_requested: bool("cancel_requested"),
        created: timestamp("created"),
        updated: timestamp("updated"),
    }
}

/// Creates a PENDING task.
pub fn create(
    conn: &mut dyn Conn,
    account_id: i64,
    kind: &str,
    params: &str,
    total: i64,
    now: Timestamp,
) -> Result<Task, DbError> {
    loop {
        let taskid = Sid::generate();
        let row = conn.query_opt(
            &format!(
                "INSERT INTO tasks (taskid, account_id, type, status, params, total, created, updated) \
                 VALUES ($1, $2, $3, 'PENDING', $4, $5, $6, $6) ON CONFLICT (taskid) DO NOTHING RETURNING {COLUMNS}"
            ),
            params![&taskid, account_id, kind, params, total, now],
        )?;
        if let Some(r) = row {
            return from_row(&r);
        }
    }
}

/// A task of the account.
pub fn get(conn: &mut dyn Conn, account_id: i64, taskid: &str) -> Result<Option<Task>, DbError> {
    conn.query_opt(
        &format!("SELECT {COLUMNS} FROM tasks WHERE account_id = $1 AND taskid = $2"),
        params![account_id, taskid],
    )?
    .map(|r| from_row(&r))
    .transpose()
}

/// A task by internal key.
pub fn by_id(conn: &mut dyn Conn, id: i64) -> Result<Option<Task>, DbError> {
    conn.query_opt(
        &format!("SELECT {COLUMNS} FROM tasks WHERE id = $1"),
        params![id],
    )?
    .map(|r| from_row(&r))
    .transpose()
}

/// A task by its internal key, locked until the transaction ends on PostgreSQL (SQLite has
/// one writer): a slice runs on the task as it is, never beside another runner's slice.
pub fn lock(conn: &mut dyn Conn, id: i64) -> Result<Option<Task>, DbError> {
    let lock = match conn.dialect() {
        Dialect::Postgres => " FOR UPDATE",
        Dialect::Sqlite => "",
    };
    conn.query_opt(
        &format!("SELECT {COLUMNS} FROM tasks WHERE id = $1{lock}"),
        params![id],
    )?
    .map(|r| from_row(&r))
    .transpose()
}

/// Tasks of this type the account created since `since`.
pub fn count_since(
    conn: &mut dyn Conn,
    account_id: i64,
    kind: &str,
    since: Timestamp,
) -> Result<i64, DbError> {
    conn.query_one(
        "SELECT COUNT(*) FROM tasks WHERE account_id = $1 AND type = $2 AND created >= $3",
        params![account_id, kind, since],
    )?
    .int(0)
}

/// Claims up to `limit` tasks to advance: PENDING or RUNNING ones whose lease is over.
pub fn claim(
    conn: &mut dyn Conn,
    now: Timestamp,
    lease_ms: i64,
    limit: i64,
) -> Result<Vec<Task>, DbError> {
    let lock = match conn.dialect() {
        Dialect::Postgres => " FOR UPDATE SKIP LOCKED",
        Dialect::Sqlite => "",
    };
    let due: Vec<Task> = conn
        .query(
            &format!(
                "SELECT {COLUMNS} FROM tasks WHERE status IN ('PENDING', 'RUNNING') \
                 AND (lease_until IS NULL OR lease_until <= $1) ORDER BY id LIMIT {limit}{lock}"
            ),
            params![now],
        )?
        .iter()
        .map(from_row)
        .collect::<Result<_, _>>()?;
    for t in &due {
        conn.execute(
            "UPDATE tasks SET lease_until = $1 WHERE id = $2",
            params![now.plus_ms(lease_ms), t.id],
        )?;
    }
    Ok(due)
}

/// Moves a task to `status`; false when it had already left PENDING/RUNNING.
pub fn set_status(
    conn: &mut dyn Conn,
    id: i64,
    status: &str,
    result: Option<&str>,
    error: Option<&str>,
    now: Timestamp,
) -> Result<bool, DbError> {
    let lease: Option<Timestamp> = None;
    Ok(conn.execute(
        "UPDATE tasks SET status = $1, result = COALESCE($2, result), error = COALESCE($3, error), updated = $4, \
         lease_until = CASE WHEN $1 = 'RUNNING' THEN lease_until ELSE $5 END \
         WHERE id = $6 AND status IN ('PENDING', 'RUNNING')",
        params![status, result, error, now, lease, id],
    )? == 1)
}

/// Records a slice's progress and frees the task for its next slice (any node may take it).
pub fn advance(
    conn: &mut dyn Conn,
    id: i64,
    cursor: i64,
    done: i64,
    total: i64,
    now: Timestamp,
) -> Result<(), DbError> {
    conn.execute(
        "UPDATE tasks SET cursor = $1, done = $2, total = $3, updated = $4, lease_until = NULL WHERE id = $5",
        params![cursor, done, total, now, id],
    )?;
    Ok(())
}

/// Asks a RUNNING task to stop at its next safe point.
pub fn request_cancel(conn: &mut dyn Conn, id: i64) -> Result<(), DbError> {
    conn.execute(
        "UPDATE tasks SET cancel_requested = $1 WHERE id = $2",
        params![true, id],
    )?;
    Ok(())
}

/// Appends a piece of an export's file.
pub fn push_chunk(conn: &mut dyn Conn, task_id: i64, seq: i64, data: &[u8]) -> Result<(), DbError> {
    conn.execute(
        "INSERT INTO export_chunks (task_id, seq, data) VALUES ($1, $2, $3)",
        params![task_id, seq, data.to_vec()],
    )?;
    Ok(())
}

/// Piece `seq` of an export's file.
pub fn chunk(conn: &mut dyn Conn, task_id: i64, seq: i64) -> Result<Option<Vec<u8>>, DbError> {
    match conn.query_opt(
        "SELECT data FROM export_chunks WHERE task_id = $1 AND seq = $2",
        params![task_id, seq],
    )? {
        Some(r) => Ok(Some(r.blob(0)?)),
        None => Ok(None),
    }
}

/// A setting, created with `make` the first time it is asked for (the same on every node).
pub fn setting(
    conn: &mut dyn Conn,
    name: &str,
    make: impl FnOnce() -> String,
) -> Result<String, DbError> {
    if let Some(r) = conn.query_opt("SELECT value FROM settings WHERE name = $1", params![name])? {
        return r.text(0);
    }
    conn.execute(
        "INSERT INTO settings (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING",
        params![name, make()],
    )?;
    conn.query_one("SELECT value FROM settings WHERE name = $1", params![name])?
        .text(0)
}
