//! Webhook deliveries: one per (event, subscription), claimed with a lease, tried until a
//! 2xx or until try 10 fails, every try recorded.

use dialtone_domain::Timestamp;

use crate::params;
use crate::search::{self, Paging};
use crate::sql::{Conn, DbError, Dialect, Row, SqlBuilder};

/// A delivery ready to be tried, with everything needed to build the request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Due {
    /// Internal key.
    pub id: i64,
    /// Where to POST.
    pub endpoint: String,
    /// The try about to be made (0 first).
    pub try_number: i64,
    /// The subscription's sid (None for a per-SMS webhook).
    pub hook_sid: Option<String>,
    /// The subscription's status (None for a per-SMS webhook).
    pub hook_status: Option<String>,
    /// Signing secret.
    pub secret: Option<String>,
    /// `SHA256` or `SHA512`.
    pub algo: String,
    /// Event id.
    pub event_id: String,
    /// Event name.
    pub event_type: String,
    /// Event data (JSON text).
    pub data: String,
    /// When the event happened.
    pub event_at: Timestamp,
    /// The account it belongs to.
    pub account_id: i64,
}

/// Who a claim leaves out: accounts and endpoints at their cap of tries in flight, and
/// endpoints backed off after failing.
#[derive(Debug, Clone, Default)]
pub struct Exclusions {
    /// Accounts whose deliveries are not claimed now.
    pub accounts: Vec<i64>,
    /// Endpoints whose deliveries are not claimed now.
    pub endpoints: Vec<String>,
}

/// Claims deliveries due at `now`, leasing them for `lease_ms` so no other worker takes
/// them meanwhile: of the first `scan` due ones (oldest first) outside `exclude`, those
/// `pick` takes, at most `limit`. A delivery with an order key waits while an earlier one of
/// the same key is pending (claimed or waiting for a retry): the events of one SMS reach a
/// subscriber in order.
pub fn claim(
    conn: &mut dyn Conn,
    now: Timestamp,
    lease_ms: i64,
    limit: i64,
    exclude: &Exclusions,
    pick: &mut dyn FnMut(&Due) -> bool,
) -> Result<Vec<Due>, DbError> {
    let lock = match conn.dialect() {
        Dialect::Postgres => " FOR UPDATE OF d SKIP LOCKED",
        Dialect::Sqlite => "",
    };
    let mut params = vec![crate::sql::Value::from(now)];
    let accounts = exclude.accounts.iter().map(|a| (*a).into()).collect();
    let mut filters = crate::sql::not_in("d.account_id", accounts, &mut params);
    let endpoints = exclude
        .endpoints
        .iter()
        .map(|e| e.as_str().into())
        .collect();
    filters.push_str(&crate::sql::not_in("d.endpoint", endpoints, &mut params));
    let scan = limit.max(1) * 4;
    let rows = conn.query(
        &format!(
            "SELECT d.id, d.endpoint, d.next_try, w.sid, w.status, w.hmac_secret, COALESCE(w.hmac_algo, 'SHA256'), \
             e.event_id, e.type, e.data, e.created, d.account_id \
             FROM deliveries d JOIN events e ON e.id = d.event_id LEFT JOIN webhooks w ON w.id = d.webhook_id \
             WHERE d.next_at IS NOT NULL AND d.next_at <= $1{filters} \
             AND (d.order_key IS NULL OR NOT EXISTS (SELECT 1 FROM deliveries p \
                  WHERE p.order_key = d.order_key AND p.status = 'pending' AND p.id < d.id)) \
             ORDER BY d.next_at LIMIT {scan}{lock}"
        ),
        &params,
    )?;
    let mut due = Vec::new();
    for row in &rows {
        if due.len() as i64 >= limit {
            break;
        }
        let d = due_from_row(row)?;
        if pick(&d) {
            due.push(d);
        }
    }
    // The claim uses up its try: a node that dies after sending leaves the next claim to
    // send the following try number, so no (event, try) pair is ever sent twice.
    for d in &due {
        conn.execute(
            "UPDATE deliveries SET next_at = $1, next_try = next_try + 1 WHERE id = $2",
            params![now.plus_ms(lease_ms), d.id],
        )?;
    }
    Ok(due)
}

fn due_from_row(r: &Row) -> Result<Due, DbError> {
    Ok(Due {
        id: r.int(0)?,
        endpoint: r.text(1)?,
        try_number: r.int(2)?,
        hook_sid: r.opt_text(3)?,
        hook_status: r.opt_text(4)?,
        secret: r.opt_text(5)?,
        algo: r.text(6)?,
        event_id: r.text(7)?,
        event_type: r.text(8)?,
        data: r.text(9)?,
        event_at: r.timestamp(10)?,
        account_id: r.int(11)?,
    })
}

/// What one try gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attempt {
    /// The delivery.
    pub delivery_id: i64,
    /// Which try.
    pub try_number: i64,
    /// HTTP status, when one came back.
    pub status_code: Option<i64>,
    /// How long it took.
    pub duration_ms: i64,
    /// Why it failed, when it did.
    pub error: Option<String>,
}

/// The delivery's fate after a try.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// Done: the receiver answered 2xx.
    Delivered,
    /// Try again at this instant.
    RetryAt(Timestamp),
    /// No more tries.
    Dead,
    /// Not tried: its subscription is disabled.
    Skipped,
}

/// Records a try and what follows it. A try whose claim was taken over meanwhile (its lease
/// ran out and another node claimed the next try) is recorded in the attempts but leaves the
/// delivery to the node that holds it now.
pub fn record(
    conn: &mut dyn Conn,
    attempt: &Attempt,
    next: Next,
    now: Timestamp,
) -> Result<(), DbError> {
    if next != Next::Skipped {
        conn.execute(
            "INSERT INTO delivery_attempts (delivery_id, try, status_code, duration_ms, error, at) VALUES ($1, $2, $3, $4, $5, $6)",
            params![attempt.delivery_id, attempt.try_number, attempt.status_code, attempt.duration_ms, attempt.error.clone(), now],
        )?;
    }
    let (status, next_at) = match next {
        Next::Delivered => ("delivered", None),
        Next::RetryAt(at) => ("pending", Some(at)),
        Next::Dead => ("dead", None),
        Next::Skipped => ("skipped", None),
    };
    conn.execute(
        "UPDATE deliveries SET status = $1, next_at = $2, updated = $3 WHERE id = $4 AND next_try = $5",
        params![status, next_at, now, attempt.delivery_id, attempt.try_number + 1],
    )?;
    Ok(())
}

/// One try as listed by `GET /webhooks/{sid}/deliveries`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttemptView {
    /// Event id.
    pub event_id: String,
    /// Event name.
    pub event_type: String,
    /// Which try.
    pub try_number: i64,
    /// HTTP status received.
    pub status_code: Option<i64>,
    /// Duration.
    pub duration_ms: i64,
    /// Why it failed.
    pub error: Option<String>,
    /// When.
    pub at: Timestamp,
    /// The delivery's state now: `pending`, `delivered`, `dead` or `skipped`.
    pub delivery_status: String,
}

/// A page of the tries of a subscription, newest first.
pub fn attempts(
    conn: &mut dyn Conn,
    webhook_id: i64,
    paging: &Paging,
) -> Result<(i64, Vec<AttemptView>), DbError> {
    let mut q = SqlBuilder::new(
        "FROM delivery_attempts a JOIN deliveries d ON d.id = a.delivery_id JOIN events e ON e.id = d.event_id WHERE d.webhook_id = ",
    );
    q.bind(webhook_id);
    let (total, rows) = search::page(
        conn,
        "e.event_id, e.type, a.try, a.status_code, a.duration_ms, a.error, a.at, d.status",
        &q,
        "a.id",
        paging,
    )?;
    let list = rows
        .iter()
        .map(|r| {
            Ok(AttemptView {
                event_id: r.text(0)?,
                event_type: r.text(1)?,
                try_number: r.int(2)?,
                status_code: r.opt_int(3)?,
                duration_ms: r.int(4)?,
                error: r.opt_text(5)?,
                at: r.timestamp(6)?,
                delivery_status: r.text(7)?,
            })
        })
        .collect::<Result<_, DbError>>()?;
    Ok((total, list))
}
