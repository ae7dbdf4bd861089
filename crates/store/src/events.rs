//! The outbox: events are written in the same transaction as the change that causes them,
//! so there is no change without its events and no event without its change.

use dialtone_domain::Timestamp;
use rand::Rng;

use crate::params;
use crate::sql::{Conn, DbError};

/// A new event id: 32 random characters, unique.
pub fn new_event_id() -> String {
    const ALPHABET: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    let mut rng = rand::rng();
    (0..32)
        .map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())] as char)
        .collect()
}

/// Records an event of `event_type` for the account (`data` is the JSON object pushed) and,
/// in the same transaction, one delivery per enabled subscription to that type. Returns the
/// event id.
pub fn emit(
    conn: &mut dyn Conn,
    account_id: i64,
    event_type: &str,
    data: &str,
    now: Timestamp,
) -> Result<String, DbError> {
    emit_to(conn, account_id, event_type, data, None, now)
}

/// Like [`emit`], also delivering to `extra_endpoint` (a per-SMS webhook, `hook_hash` null).
pub fn emit_to(
    conn: &mut dyn Conn,
    account_id: i64,
    event_type: &str,
    data: &str,
    extra_endpoint: Option<&str>,
    now: Timestamp,
) -> Result<String, DbError> {
    let event_id = new_event_id();
    let id = conn
        .query_one(
            "INSERT INTO events (event_id, account_id, type, data, created) VALUES ($1, $2, $3, $4, $5) RETURNING id",
            params![&event_id, account_id, event_type, data, now],
        )?
        .int(0)?;
    conn.execute(
        "INSERT INTO deliveries (account_id, event_id, webhook_id, endpoint, next_try, status, next_at, created, updated) \
         SELECT account_id, $1, id, endpoint, 0, 'pending', $2, $2, $2 FROM webhooks \
         WHERE account_id = $3 AND type = $4 AND status = 'enabled'",
        params![id, now, account_id, event_type],
    )?;
    if let Some(endpoint) = extra_endpoint {
        conn.execute(
            "INSERT INTO deliveries (account_id, event_id, webhook_id, endpoint, next_try, status, next_at, created, updated) \
             VALUES ($1, $2, NULL, $3, 0, 'pending', $4, $4, $4)",
            params![account_id, id, endpoint, now],
        )?;
    }
    Ok(event_id)
}

/// An event as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredEvent {
    /// Unique id.
    pub event_id: String,
    /// Event name, e.g. `did.assigned`.
    pub event_type: String,
    /// JSON object pushed.
    pub data: String,
    /// When it happened.
    pub created: Timestamp,
}

/// The account's events, oldest first (for tests and diagnostics).
pub fn list(conn: &mut dyn Conn, account_id: i64) -> Result<Vec<StoredEvent>, DbError> {
    conn.query(
        "SELECT event_id, type, data, created FROM events WHERE account_id = $1 ORDER BY id",
        params![account_id],
    )?
    .iter()
    .map(|r| {
        Ok(StoredEvent {
            event_id: r.text(0)?,
            event_type: r.text(1)?,
            data: r.text(2)?,
            created: r.timestamp(3)?,
        })
    })
    .collect()
}
