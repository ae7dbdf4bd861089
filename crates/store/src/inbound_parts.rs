//! Parts of concatenated inbound SMS from real networks, kept in the database until the last
//! one arrives, so a part acknowledged to the SMSC survives a crash and may arrive through
//! any node.

use dialtone_domain::Timestamp;

use crate::params;
use crate::sql::{Conn, DbError, Dialect};

/// Parts of a message that never completes are forgotten after this long.
pub const KEEP_MS: i64 = 24 * 3600 * 1000;

/// Which message a part belongs to, and which part it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Part<'a> {
    /// The connector it came through.
    pub network: &'a str,
    /// Sender.
    pub sender: &'a str,
    /// Recipient.
    pub recipient: &'a str,
    /// The concatenation reference.
    pub reference: i64,
    /// Parts in all.
    pub total: i64,
    /// This part, 1-based.
    pub seq: i64,
}

/// Stores a part (a part delivered twice is kept once); returns the whole text, parts in
/// order, when this part completes the message (its parts are then removed).
pub fn add(
    conn: &mut dyn Conn,
    part: &Part<'_>,
    text: &str,
    now: Timestamp,
) -> Result<Option<String>, DbError> {
    if conn.dialect() == Dialect::Postgres {
        // Two nodes storing the last two parts at once must not both miss the other's.
        let key = format!(
            "{}\n{}\n{}\n{}\n{}",
            part.network, part.sender, part.recipient, part.reference, part.total
        );
        conn.query(
            "SELECT pg_advisory_xact_lock($1) IS NULL",
            params![crate::sql::lock_key(key.as_bytes())],
        )?;
    }
    conn.execute(
        "DELETE FROM inbound_parts WHERE created < $1",
        params![Timestamp::from_millis(now.millis() - KEEP_MS)],
    )?;
    conn.execute(
        "INSERT INTO inbound_parts (network, sender, recipient, reference, total, seq, text, created) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT DO NOTHING",
        params![
            part.network,
            part.sender,
            part.recipient,
            part.reference,
            part.total,
            part.seq,
            text,
            now
        ],
    )?;
    let which = params![
        part.network,
        part.sender,
        part.recipient,
        part.reference,
        part.total
    ];
    let rows = conn.query(
        "SELECT text FROM inbound_parts WHERE network = $1 AND sender = $2 AND recipient = $3 \
         AND reference = $4 AND total = $5 AND seq BETWEEN 1 AND total ORDER BY seq",
        which,
    )?;
    if (rows.len() as i64) < part.total.max(1) {
        return Ok(None);
    }
    let whole = rows
        .iter()
        .map(|r| r.text(0))
        .collect::<Result<Vec<_>, _>>()?
        .concat();
    conn.execute(
        "DELETE FROM inbound_parts WHERE network = $1 AND sender = $2 AND recipient = $3 \
         AND reference = $4 AND total = $5",
        which,
    )?;
    Ok(Some(whole))
}
