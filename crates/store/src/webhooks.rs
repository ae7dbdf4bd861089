//! Webhook subscriptions: which account wants which event type pushed where.

use dialtone_domain::{Sid, Timestamp};

use crate::params;
use crate::search::{self, Paging};
use crate::sql::{Conn, DbError, Row, SqlBuilder};

/// A subscription.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Webhook {
    /// Internal key.
    pub id: i64,
    /// Public identifier.
    pub sid: Sid,
    /// Owner.
    pub account_id: i64,
    /// Event name, e.g. `sms.mo`.
    pub event_type: String,
    /// Where events are POSTed (fixed at creation).
    pub endpoint: String,
    /// `enabled` or `disabled`.
    pub status: String,
    /// Signing secret (never shown after creation).
    pub hmac_secret: Option<String>,
    /// `SHA256` or `SHA512`.
    pub hmac_algo: String,
    /// Creation time.
    pub created: Timestamp,
    /// Last change.
    pub updated: Timestamp,
}

const COLUMNS: &str =
    "id, sid, account_id, type, endpoint, status, hmac_secret, hmac_algo, created, updated";

fn from_row(r: &Row) -> Result<Webhook, DbError> {
    Ok(Webhook {
        id: r.int(0)?,
        sid: Sid::from_stored(r.text(1)?),
        account_id: r.int(2)?,
        event_type: r.text(3)?,
        endpoint: r.text(4)?,
        status: r.text(5)?,
        hmac_secret: r.opt_text(6)?,
        hmac_algo: r.text(7)?,
        created: r.timestamp(8)?,
        updated: r.timestamp(9)?,
    })
}

/// The event type of outbound SMS's moves: a subscription to it that starts makes the
/// account's planned deliveries visits of the worker again (`sms::unplan_deliveries`).
const SMS_MOVES: &str = "sms.mt.status_update";

/// Creates an enabled subscription.
pub fn create(
    conn: &mut dyn Conn,
    account_id: i64,
    event_type: &str,
    endpoint: &str,
    secret: Option<&str>,
    algo: &str,
    now: Timestamp,
) -> Result<Webhook, DbError> {
    loop {
        let sid = Sid::generate();
        let row = conn.query_opt(
            &format!(
                "INSERT INTO webhooks (sid, account_id, type, endpoint, status, hmac_secret, hmac_algo, created, updated) \
                 VALUES ($1, $2, $3, $4, 'enabled', $5, $6, $7, $7) ON CONFLICT (sid) DO NOTHING RETURNING {COLUMNS}"
            ),
            params![&sid, account_id, event_type, endpoint, secret, algo, now],
        )?;
        if let Some(r) = row {
            if event_type == SMS_MOVES {
                crate::sms::unplan_deliveries(conn, account_id, now)?;
            }
            return from_row(&r);
        }
    }
}

/// A subscription of the account.
pub fn get(conn: &mut dyn Conn, account_id: i64, sid: &Sid) -> Result<Option<Webhook>, DbError> {
    conn.query_opt(
        &format!("SELECT {COLUMNS} FROM webhooks WHERE account_id = $1 AND sid = $2"),
        params![account_id, sid],
    )?
    .map(|r| from_row(&r))
    .transpose()
}

/// Changes status and/or signing options; None leaves a field as it is.
pub fn update(
    conn: &mut dyn Conn,
    id: i64,
    status: Option<&str>,
    secret: Option<Option<&str>>,
    algo: Option<&str>,
    now: Timestamp,
) -> Result<(), DbError> {
    if let Some(s) = status {
        // Enabled from another status: a subscription starts.
        let starts = s == "enabled"
            && conn
                .query_opt("SELECT status FROM webhooks WHERE id = $1", params![id])?
                .map(|r| r.text(0))
                .transpose()?
                .is_some_and(|was| was != "enabled");
        let row = conn.query_opt(
            "UPDATE webhooks SET status = $1, updated = $2 WHERE id = $3 RETURNING account_id, type",
            params![s, now, id],
        )?;
        if let Some(r) = row
            && starts
            && r.text(1)? == SMS_MOVES
        {
            crate::sms::unplan_deliveries(conn, r.int(0)?, now)?;
        }
    }
    if let Some(secret) = secret {
        conn.execute(
            "UPDATE webhooks SET hmac_secret = $1, updated = $2 WHERE id = $3",
            params![secret, now, id],
        )?;
    }
    if let Some(a) = algo {
        conn.execute(
            "UPDATE webhooks SET hmac_algo = $1, updated = $2 WHERE id = $3",
            params![a, now, id],
        )?;
    }
    Ok(())
}

/// Deletes a subscription with its deliveries.
pub fn delete(conn: &mut dyn Conn, id: i64) -> Result<(), DbError> {
    conn.execute(
        "DELETE FROM delivery_attempts WHERE delivery_id IN (SELECT id FROM deliveries WHERE webhook_id = $1)",
        params![id],
    )?;
    conn.execute("DELETE FROM deliveries WHERE webhook_id = $1", params![id])?;
    conn.execute("DELETE FROM webhooks WHERE id = $1", params![id])?;
    Ok(())
}

/// Filters of a webhook search.
#[derive(Debug, Clone, Default)]
pub struct WebhookFilter {
    /// One subscription.
    pub sid: Option<Sid>,
    /// Event type.
    pub event_type: Option<String>,
    /// `enabled` or `disabled`.
    pub status: Option<String>,
}

/// A page of the account's subscriptions.
pub fn search(
    conn: &mut dyn Conn,
    account_id: i64,
    f: &WebhookFilter,
    paging: &Paging,
) -> Result<(i64, Vec<Webhook>), DbError> {
    let mut q = SqlBuilder::new("FROM webhooks WHERE account_id = ");
    q.bind(account_id);
    if let Some(sid) = &f.sid {
        q.push(" AND sid = ").bind(sid);
    }
    if let Some(t) = &f.event_type {
        q.push(" AND type = ").bind(t.as_str());
    }
    if let Some(s) = &f.status {
        q.push(" AND status = ").bind(s.as_str());
    }
    let (total, rows) = search::page(conn, COLUMNS, &q, "id", paging)?;
    Ok((total, rows.iter().map(from_row).collect::<Result<_, _>>()?))
}

/// Every subscription of the account, oldest first (the earlier interface's list).
pub fn list(conn: &mut dyn Conn, account_id: i64) -> Result<Vec<Webhook>, DbError> {
    conn.query(
        &format!("SELECT {COLUMNS} FROM webhooks WHERE account_id = $1 ORDER BY id"),
        params![account_id],
    )?
    .iter()
    .map(from_row)
    .collect()
}
