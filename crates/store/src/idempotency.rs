//! Idempotency keys: the first answer to a POST carrying `Idempotency-Key`, kept 24 hours
//! per account so a retried request (after a timeout, on another node, after a restart) is
//! answered the same way instead of acting twice.

use dialtone_domain::Timestamp;

use crate::params;
use crate::sql::{Conn, DbError};

/// How long a key and its answer are kept.
pub const RETENTION_MS: i64 = 24 * 3600 * 1000;

/// A stored answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    /// HTTP status.
    pub status: u16,
    /// `Content-Type` of the body, if any.
    pub content_type: Option<String>,
    /// The body.
    pub body: Vec<u8>,
}

/// What to do with a keyed request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Begin {
    /// First use (or a first attempt that died): the key is now held; run the request.
    Run,
    /// Answered before: replay this.
    Replay(Answer),
    /// The key was used with another request.
    Mismatch,
    /// The first request with this key is still running.
    InFlight,
    /// The first request with this key committed its change but its process died before
    /// its answer was kept: running it again would act twice, so it is not run.
    AnswerLost,
}

tokio::task_local! {
    /// The keyed request a task is running: `(account id, key)`.
    static SCOPE: (i64, String);
}

/// Runs `request` as the keyed request `(account_id, key)`: every write it makes through
/// [`crate::Store`] also marks the key as committed, in the write's own transaction. So a
/// process killed after the request's change and before its answer is kept leaves a key
/// that says so, and a retry is refused instead of acting twice.
pub async fn scope<F: std::future::Future>(account_id: i64, key: String, request: F) -> F::Output {
    SCOPE.scope((account_id, key), request).await
}

/// The keyed request of the current task, if any.
pub(crate) fn current() -> Option<(i64, String)> {
    SCOPE.try_with(Clone::clone).ok()
}

/// Marks the key as committed (called in the transaction of a write of a keyed request).
pub(crate) fn mark_committed(
    conn: &mut dyn Conn,
    account_id: i64,
    key: &str,
) -> Result<(), DbError> {
    conn.execute(
        "UPDATE idempotency_keys SET committed = $1 WHERE account_id = $2 AND key = $3",
        params![true, account_id, key],
    )?;
    Ok(())
}

/// Takes `key` for a request whose method, path and body hash to `request_hash`, holding it
/// `hold_ms` while the request runs.
pub fn begin(
    conn: &mut dyn Conn,
    account_id: i64,
    key: &str,
    request_hash: &str,
    hold_ms: i64,
    now: Timestamp,
) -> Result<Begin, DbError> {
    let hold = Timestamp::from_millis(now.millis() + hold_ms);
    let expired = Timestamp::from_millis(now.millis() - RETENTION_MS);
    conn.execute(
        "DELETE FROM idempotency_keys WHERE account_id = $1 AND key = $2 AND created <= $3",
        params![account_id, key, expired],
    )?;
    let inserted = conn.execute(
        "INSERT INTO idempotency_keys (account_id, key, request_hash, locked_until, created) \
         VALUES ($1, $2, $3, $4, $5) ON CONFLICT (account_id, key) DO NOTHING",
        params![account_id, key, request_hash, hold, now],
    )?;
    if inserted == 1 {
        return Ok(Begin::Run);
    }
    let Some(row) = conn.query_opt(
        "SELECT request_hash, status, content_type, body, locked_until, committed FROM idempotency_keys \
         WHERE account_id = $1 AND key = $2",
        params![account_id, key],
    )?
    else {
        return Ok(Begin::InFlight);
    };
    if row.text(0)? != request_hash {
        return Ok(Begin::Mismatch);
    }
    if let Some(status) = row.opt_int(1)? {
        return Ok(Begin::Replay(Answer {
            status: u16::try_from(status).unwrap_or(500),
            content_type: row.opt_text(2)?,
            body: row.opt_blob(3)?.unwrap_or_default(),
        }));
    }
    if row.timestamp(4)? > now {
        return Ok(Begin::InFlight);
    }
    if row.bool(5)? {
        return Ok(Begin::AnswerLost);
    }
    // The first attempt died before answering: the retry runs, holding the key again.
    conn.execute(
        "UPDATE idempotency_keys SET locked_until = $1 WHERE account_id = $2 AND key = $3",
        params![hold, account_id, key],
    )?;
    Ok(Begin::Run)
}

/// Stores the answer of a request that ran.
pub fn finish(
    conn: &mut dyn Conn,
    account_id: i64,
    key: &str,
    answer: &Answer,
) -> Result<(), DbError> {
    conn.execute(
        "UPDATE idempotency_keys SET status = $1, content_type = $2, body = $3 \
         WHERE account_id = $4 AND key = $5",
        params![
            i64::from(answer.status),
            answer.content_type.as_deref(),
            answer.body.as_slice(),
            account_id,
            key
        ],
    )?;
    Ok(())
}

/// Frees a key whose request failed without a definite answer (a 5xx) and committed
/// nothing, so a retry runs.
pub fn release(conn: &mut dyn Conn, account_id: i64, key: &str) -> Result<(), DbError> {
    conn.execute(
        "DELETE FROM idempotency_keys WHERE account_id = $1 AND key = $2 AND status IS NULL AND committed = $3",
        params![account_id, key, false],
    )?;
    Ok(())
}

/// Forgets keys older than the retention; returns how many.
pub fn purge(conn: &mut dyn Conn, now: Timestamp, limit: i64) -> Result<u64, DbError> {
    let expired = Timestamp::from_millis(now.millis() - RETENTION_MS);
    conn.execute(
        &format!(
            "DELETE FROM idempotency_keys WHERE (account_id, key) IN \
             (SELECT account_id, key FROM idempotency_keys WHERE created <= $1 LIMIT {limit})"
        ),
        params![expired],
    )
}
