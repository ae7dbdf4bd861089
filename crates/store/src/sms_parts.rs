//! Parts of outbound SMS as a real network took them (the network's message id of each, and
//! the status its last delivery receipt gave, so receipts find their SMS and a multi-part SMS
//! is delivered when all its parts are); and the SMPP connectors the operator added.

use dialtone_domain::Timestamp;

use crate::params;
use crate::sql::{Conn, DbError};

/// One part of an SMS, as a network took it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SmsPart {
    /// Internal key.
    pub id: i64,
    /// The SMS it belongs to.
    pub sms_id: i64,
    /// Position in the SMS, from 1.
    pub part: i64,
    /// The network's id (lowercase).
    pub message_id: String,
    /// Status word of the last receipt (`sent` before any).
    pub status: String,
    /// The network's words in that receipt.
    pub detail: String,
}

crate::row_decoder! {
    const COLUMNS; fn from_row -> SmsPart {
        id: int("id"),
        sms_id: int("sms_id"),
        part: int("part"),
        message_id: text("message_id"),
        status: text("status"),
        detail: text("detail"),
    }
}

/// Records that `network` took part `part` (1-based) of an SMS under `message_key` (the
/// network's id as keys are written: see the carrier's `receipt::id_key`); false when that
/// part was recorded already.
pub fn insert(
    conn: &mut dyn Conn,
    sms_id: i64,
    network: &str,
    part: i64,
    message_key: &str,
    now: Timestamp,
) -> Result<bool, DbError> {
    let n = conn.execute(
        "INSERT INTO sms_parts (network, message_id, sms_id, part, status, updated) \
         VALUES ($1, $2, $3, $4, 'sent', $5) ON CONFLICT (sms_id, part) DO NOTHING",
        params![network, message_key, sms_id, part, now],
    )?;
    Ok(n > 0)
}

/// The parts of an SMS already taken by a network (1-based), in order.
pub fn taken(conn: &mut dyn Conn, sms_id: i64) -> Result<Vec<i64>, DbError> {
    conn.query(
        "SELECT part FROM sms_parts WHERE sms_id = $1 ORDER BY part",
        params![sms_id],
    )?
    .iter()
    .map(|r| r.int(0))
    .collect()
}

/// The part a receipt names: the first of `forms` (the id's key, then its other forms) that
/// `network` gave; the most recent part when a network reused an id.
pub fn find(
    conn: &mut dyn Conn,
    network: &str,
    forms: &[String],
) -> Result<Option<SmsPart>, DbError> {
    for form in forms {
        let row = conn.query_opt(
            &format!(
                "SELECT {COLUMNS} FROM sms_parts WHERE network = $1 AND message_id = $2 \
                 ORDER BY id DESC LIMIT 1"
            ),
            params![network, form.to_ascii_lowercase()],
        )?;
        if let Some(r) = row {
            return from_row(&r).map(Some);
        }
    }
    Ok(None)
}

/// Stores what a receipt said of a part.
pub fn set_status(
    conn: &mut dyn Conn,
    id: i64,
    status: &str,
    detail: &str,
    now: Timestamp,
) -> Result<(), DbError> {
    conn.execute(
        "UPDATE sms_parts SET status = $1, detail = $2, updated = $3 WHERE id = $4",
        params![status, detail, now, id],
    )?;
    Ok(())
}

/// Part `part` (1-based) of an SMS, when a network took it.
pub fn get(conn: &mut dyn Conn, sms_id: i64, part: i64) -> Result<Option<SmsPart>, DbError> {
    conn.query_opt(
        &format!("SELECT {COLUMNS} FROM sms_parts WHERE sms_id = $1 AND part = $2"),
        params![sms_id, part],
    )?
    .map(|r| from_row(&r))
    .transpose()
}

/// Every part of an SMS, in order.
pub fn of_sms(conn: &mut dyn Conn, sms_id: i64) -> Result<Vec<SmsPart>, DbError> {
    conn.query(
        &format!("SELECT {COLUMNS} FROM sms_parts WHERE sms_id = $1 ORDER BY part"),
        params![sms_id],
    )?
    .iter()
    .map(from_row)
    .collect()
}

/// SMPP connectors added by the operator: name and configuration (JSON), oldest first.
pub fn connectors(conn: &mut dyn Conn) -> Result<Vec<(String, String)>, DbError> {
    conn.query(
        "SELECT name, config FROM smpp_connectors ORDER BY created, name",
        params![],
    )?
    .iter()
    .map(|r| Ok((r.text(0)?, r.text(1)?)))
    .collect()
}

/// Stores a connector added by the operator; false when the name is taken.
pub fn add_connector(
    conn: &mut dyn Conn,
    name: &str,
    config: &str,
    now: Timestamp,
) -> Result<bool, DbError> {
    let taken = conn
        .query_opt(
            "SELECT 1 FROM smpp_connectors WHERE name = $1",
            params![name],
        )?
        .is_some();
    if taken {
        return Ok(false);
    }
    conn.execute(
        "INSERT INTO smpp_connectors (name, config, created) VALUES ($1, $2, $3)",
        params![name, config, now],
    )?;
    Ok(true)
}

/// Forgets a connector added by the operator; false when there was none of that name.
pub fn remove_connector(conn: &mut dyn Conn, name: &str) -> Result<bool, DbError> {
    Ok(conn.execute("DELETE FROM smpp_connectors WHERE name = $1", params![name])? > 0)
}
