//! Delivery receipts no part matched yet. An SMSC may send a part's receipt before the
//! platform has committed that part's message id (its `submit_sm_resp` and the receipt race),
//! and a carrier may send receipts for messages this platform never sent. Such a receipt is
//! stored before the SMSC gets its `deliver_sm_resp`, matched as soon as a part with its id
//! is recorded (and by the worker, a few times, in case the two commits raced), and shown
//! to the operator while unmatched: never dropped.

use dialtone_domain::Timestamp;

use crate::params;
use crate::sql::{Conn, DbError};

/// A receipt kept until a part matches it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnmatchedReceipt {
    /// Internal key.
    pub id: i64,
    /// The connector it came through.
    pub network: String,
    /// The message id as the receipt wrote it.
    pub message_id: String,
    /// Its key (as parts store ids).
    pub message_key: String,
    /// The status word it gives (`delivered`, `failed`, ...).
    pub status: String,
    /// The carrier's words.
    pub detail: String,
    /// When it arrived.
    pub received: Timestamp,
    /// How many times the worker tried to match it.
    pub tries: i64,
    /// When the worker tries again (None: only when a part with its id is recorded).
    pub next_at: Option<Timestamp>,
}

crate::row_decoder! {
    const COLUMNS; fn from_row -> UnmatchedReceipt {
        id: int("id"),
        network: text("network"),
        message_id: text("message_id"),
        message_key: text("message_key"),
        status: text("status"),
        detail: text("detail"),
        received: timestamp("received"),
        tries: int("tries"),
        next_at: opt_timestamp("next_at"),
    }
}

/// What an unmatched receipt said, to keep it.
#[derive(Debug, Clone, Copy)]
pub struct NewReceipt<'a> {
    /// The connector it came through.
    pub network: &'a str,
    /// The message id as written.
    pub message_id: &'a str,
    /// Its key.
    pub message_key: &'a str,
    /// The status word.
    pub status: &'a str,
    /// The carrier's words.
    pub detail: &'a str,
}

/// Keeps a receipt no part matched; the worker tries it again at `next_at`. Returns its id.
pub fn keep(
    conn: &mut dyn Conn,
    r: &NewReceipt<'_>,
    now: Timestamp,
    next_at: Timestamp,
) -> Result<i64, DbError> {
    conn.insert_id(
        "INSERT INTO smpp_receipts (network, message_id, message_key, status, detail, received, tries, next_at) \
         VALUES ($1, $2, $3, $4, $5, $6, 0, $7)",
        params![
            r.network,
            r.message_id,
            r.message_key,
            r.status,
            r.detail,
            now,
            next_at
        ],
    )?
    .ok_or_else(|| DbError::Other("a receipt insert wrote no row".to_owned()))
}

/// A kept receipt by its id.
pub fn get(conn: &mut dyn Conn, id: i64) -> Result<Option<UnmatchedReceipt>, DbError> {
    conn.query_opt(
        &format!("SELECT {COLUMNS} FROM smpp_receipts WHERE id = $1"),
        params![id],
    )?
    .map(|r| from_row(&r))
    .transpose()
}

/// The kept receipts of `network` whose key is one of `keys`, oldest first.
pub fn matching(
    conn: &mut dyn Conn,
    network: &str,
    keys: &[String],
) -> Result<Vec<UnmatchedReceipt>, DbError> {
    let mut found = Vec::new();
    for key in keys {
        let rows = conn.query(
            &format!(
                "SELECT {COLUMNS} FROM smpp_receipts WHERE network = $1 AND message_key = $2 ORDER BY id"
            ),
            params![network, key],
        )?;
        for r in &rows {
            found.push(from_row(r)?);
        }
    }
    found.sort_by_key(|r| r.id);
    Ok(found)
}

/// Takes a receipt to apply it: false when another transaction took it first (on
/// PostgreSQL the second waits for the first to commit, then finds nothing), so a receipt
/// is applied once however many paths find it.
pub fn take(conn: &mut dyn Conn, id: i64) -> Result<bool, DbError> {
    Ok(conn.execute("DELETE FROM smpp_receipts WHERE id = $1", params![id])? > 0)
}

/// Up to `limit` receipts the worker should try to match again at `now`.
pub fn due(
    conn: &mut dyn Conn,
    now: Timestamp,
    limit: i64,
) -> Result<Vec<UnmatchedReceipt>, DbError> {
    conn.query(
        &format!(
            "SELECT {COLUMNS} FROM smpp_receipts WHERE next_at IS NOT NULL AND next_at <= $1 \
             ORDER BY next_at LIMIT {limit}"
        ),
        params![now],
    )?
    .iter()
    .map(from_row)
    .collect()
}

/// Records one more try of a receipt that still matched nothing; the next at `next_at`
/// (None: no more tries by the worker).
pub fn tried(conn: &mut dyn Conn, id: i64, next_at: Option<Timestamp>) -> Result<(), DbError> {
    conn.execute(
        "UPDATE smpp_receipts SET tries = tries + 1, next_at = $1 WHERE id = $2",
        params![next_at, id],
    )?;
    Ok(())
}

/// The kept receipts, newest first, of one connector or of all; at most `limit`.
pub fn list(
    conn: &mut dyn Conn,
    network: Option<&str>,
    limit: i64,
) -> Result<Vec<UnmatchedReceipt>, DbError> {
    let rows = match network {
        Some(n) => conn.query(
            &format!(
                "SELECT {COLUMNS} FROM smpp_receipts WHERE network = $1 ORDER BY id DESC LIMIT $2"
            ),
            params![n, limit],
        )?,
        None => conn.query(
            &format!("SELECT {COLUMNS} FROM smpp_receipts ORDER BY id DESC LIMIT $1"),
            params![limit],
        )?,
    };
    rows.iter().map(from_row).collect()
}

/// How many receipts each connector has kept unmatched.
pub fn counts(conn: &mut dyn Conn) -> Result<Vec<(String, i64)>, DbError> {
    conn.query(
        "SELECT network, count(*) FROM smpp_receipts GROUP BY network ORDER BY network",
        params![],
    )?
    .iter()
    .map(|r| Ok((r.text(0)?, r.int(1)?)))
    .collect()
}
