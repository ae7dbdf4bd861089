//! Webhook deliveries as the console shows them: newest first by subscription or by the SMS
//! that caused them, one with its tries and everything needed to show its request again,
//! and a redelivery on demand (a new try number, so no (event, try) pair is sent twice).

use dialtone_domain::Timestamp;

use crate::deliveries::Due;
use crate::params;
use crate::search::{self, Keyset};
use crate::sql::{Conn, DbError, Row, SqlBuilder};

/// A delivery in a list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeliveryRow {
    /// Internal key (the console's handle on it).
    pub id: i64,
    /// Where it goes.
    pub endpoint: String,
    /// `pending`, `delivered`, `dead` or `skipped`.
    pub status: String,
    /// Tries claimed so far.
    pub tries: i64,
    /// Event id.
    pub event_id: String,
    /// Event name.
    pub event_type: String,
    /// The subscription's sid (None for a per-SMS webhook).
    pub hook_sid: Option<String>,
    /// When the event happened.
    pub created: Timestamp,
}

/// Which deliveries.
#[derive(Debug, Clone, Copy)]
pub enum DeliveriesOf<'a> {
    /// Of one subscription (internal id).
    Webhook(i64),
    /// Caused by one SMS (its sid: the deliveries' order keys start with it).
    Sms(&'a str),
}

const COLUMNS: &str =
    "d.id, d.endpoint, d.status, d.next_try, e.event_id, e.type, w.sid, e.created";

fn row(r: &Row) -> Result<DeliveryRow, DbError> {
    Ok(DeliveryRow {
        id: r.int(0)?,
        endpoint: r.text(1)?,
        status: r.text(2)?,
        tries: r.int(3)?,
        event_id: r.text(4)?,
        event_type: r.text(5)?,
        hook_sid: r.opt_text(6)?,
        created: r.timestamp(7)?,
    })
}

/// The account's deliveries of a subscription or of an SMS, newest first.
pub fn newest(
    conn: &mut dyn Conn,
    account_id: i64,
    of: DeliveriesOf<'_>,
    keyset: &Keyset,
) -> Result<Vec<DeliveryRow>, DbError> {
    let mut q = SqlBuilder::new(
        "FROM deliveries d JOIN events e ON e.id = d.event_id LEFT JOIN webhooks w ON w.id = d.webhook_id \
         WHERE d.account_id = ",
    );
    q.bind(account_id);
    match of {
        DeliveriesOf::Webhook(id) => q.push(" AND d.webhook_id = ").bind(id),
        // Order keys are `SID/HOOK` (or `SID/own`): a range of the index, from `SID/` up
        // to `SID0` ('0' follows '/').
        DeliveriesOf::Sms(sid) => {
            q.push(" AND d.order_key >= ").bind(format!("{sid}/"));
            q.push(" AND d.order_key < ").bind(format!("{sid}0"))
        }
    };
    search::newest_first(conn, COLUMNS, &q, None, "d.id", keyset)?
        .iter()
        .map(row)
        .collect()
}

/// One try of a delivery.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Try {
    /// Which try (0 first).
    pub try_number: i64,
    /// HTTP status received.
    pub status_code: Option<i64>,
    /// How long it took.
    pub duration_ms: i64,
    /// Why it failed.
    pub error: Option<String>,
    /// When.
    pub at: Timestamp,
}

/// A delivery of the account with its tries (oldest first) and the request of each try
/// (`Due` of try 0; the envelope of another try differs only by its number).
pub fn one(
    conn: &mut dyn Conn,
    account_id: i64,
    id: i64,
) -> Result<Option<(DeliveryRow, Due, Vec<Try>)>, DbError> {
    let Some(r) = conn.query_opt(
        &format!(
            "SELECT {COLUMNS}, w.status, w.hmac_secret, COALESCE(w.hmac_algo, 'SHA256'), e.data \
             FROM deliveries d JOIN events e ON e.id = d.event_id LEFT JOIN webhooks w ON w.id = d.webhook_id \
             WHERE d.id = $1 AND d.account_id = $2"
        ),
        params![id, account_id],
    )?
    else {
        return Ok(None);
    };
    let delivery = row(&r)?;
    let due = Due {
        id: delivery.id,
        endpoint: delivery.endpoint.clone(),
        try_number: 0,
        hook_sid: delivery.hook_sid.clone(),
        hook_status: r.opt_text(8)?,
        secret: r.opt_text(9)?,
        algo: r.text(10)?,
        event_id: delivery.event_id.clone(),
        event_type: delivery.event_type.clone(),
        data: r.text(11)?,
        event_at: delivery.created,
        account_id,
    };
    let tries = conn
        .query(
            "SELECT try, status_code, duration_ms, error, at FROM delivery_attempts \
             WHERE delivery_id = $1 ORDER BY id LIMIT 100",
            params![id],
        )?
        .iter()
        .map(|t| {
            Ok(Try {
                try_number: t.int(0)?,
                status_code: t.opt_int(1)?,
                duration_ms: t.int(2)?,
                error: t.opt_text(3)?,
                at: t.timestamp(4)?,
            })
        })
        .collect::<Result<_, DbError>>()?;
    Ok(Some((delivery, due, tries)))
}

/// Makes a finished delivery of the account (delivered, dead or skipped) due again now:
/// its next try has the next number. False when there is no such finished delivery (a
/// pending one is already on its way).
pub fn redeliver(
    conn: &mut dyn Conn,
    account_id: i64,
    id: i64,
    now: Timestamp,
) -> Result<bool, DbError> {
    Ok(conn.execute(
        "UPDATE deliveries SET status = 'pending', next_at = $1, updated = $1 \
         WHERE id = $2 AND account_id = $3 AND status <> 'pending'",
        params![now, id, account_id],
    )? == 1)
}
