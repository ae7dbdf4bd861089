//! SMS, their status history, and approved alphanumeric senders.

use dialtone_domain::sms::SmsStatus;
use dialtone_domain::{Money, Sid, Timestamp};

use crate::params;
use crate::search::{self, Paging};
use crate::sql::{Conn, DbError, Dialect, Row, SqlBuilder, Value};

/// An SMS as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct Sms {
    /// Internal key.
    pub id: i64,
    /// Public identifier.
    pub sid: Sid,
    /// Owner.
    pub account_id: i64,
    /// `outbound` or `inbound`.
    pub direction: String,
    /// Sender.
    pub from: String,
    /// Recipient.
    pub to: String,
    /// Text.
    pub body: String,
    /// `gsm` or `unicode`.
    pub encoding: String,
    /// Number of parts.
    pub parts: i64,
    /// `marketing` or `alerting` (outbound only).
    pub traffic_type: Option<String>,
    /// v2.0 status word.
    pub status: String,
    /// Why it failed, when it did.
    pub status_error: String,
    /// The customer's own data.
    pub user_data: Option<String>,
    /// Flash SMS.
    pub flash: bool,
    /// Per-SMS webhook endpoint.
    pub webhook_url: Option<String>,
    /// What it cost.
    pub billing_debit: Money,
    /// Which network carries it.
    pub carrier: String,
    /// When the worker should next act on it.
    pub next_at: Option<Timestamp>,
    /// Creation time.
    pub created: Timestamp,
    /// Last change.
    pub updated: Timestamp,
    /// When the carrier took it.
    pub sent_at: Option<Timestamp>,
    /// When it was delivered (or received, inbound).
    pub delivered_at: Option<Timestamp>,
    /// Every status move, oldest first.
    pub history: Vec<StatusChange>,
    /// The simulated network's `sent` planned at this time and not yet written (see
    /// [`Sms::as_of`]).
    pub plan_sent_at: Option<Timestamp>,
    /// The simulated network's `remote-queued` planned at this time and not yet written.
    pub plan_queued_at: Option<Timestamp>,
    /// The simulated network's `delivered` planned at this time and never written: the
    /// worker does not visit the SMS (see [`Sms::take_planned`]).
    pub plan_delivered_at: Option<Timestamp>,
}

impl Sms {
    /// The SMS as it is at `now`: its planned moves that are due by then applied (see
    /// [`Sms::take_planned`]). Every read that shows an SMS or acts on its status reads it
    /// so; only the worker that writes the planned moves reads the stored row as it is.
    #[must_use]
    pub fn as_of(mut self, now: Timestamp) -> Sms {
        self.take_planned(Some(now));
        self
    }

    /// Applies the planned moves due by `until` (all of them when `None`) to this SMS as it
    /// was stored, and gives them, oldest first.
    ///
    /// Why plans: the simulated network's timetable is known when it takes an SMS. When
    /// nothing receives an SMS's moves (no subscription, no webhook of its own, no console
    /// feed watching), its `sent` and `remote-queued` are stored as times with the SMS
    /// instead of being written each by the worker when due: the worker visits the SMS
    /// once, for its last move, and writes the planned ones then, at their planned times.
    /// When moreover nothing on this platform owns its recipient (so its delivery causes
    /// nothing) and its timetable ends in `delivered`, that move is planned too, and the
    /// worker never visits it: a subscription or a console feed that appears before its
    /// delivery makes that a visit again ([`unplan_deliveries`]). Reads see the same
    /// statuses, at the same times, as if each had been written.
    pub fn take_planned(&mut self, until: Option<Timestamp>) -> Vec<StatusChange> {
        let mut taken = Vec::new();
        for (at, new_status) in self.planned(until) {
            let change = StatusChange {
                old_status: std::mem::replace(&mut self.status, new_status.as_str().to_owned()),
                new_status: new_status.as_str().to_owned(),
                at,
            };
            match new_status {
                SmsStatus::Sent => {
                    self.plan_sent_at = None;
                    self.sent_at = self.sent_at.or(Some(at));
                }
                SmsStatus::Delivered => {
                    self.plan_delivered_at = None;
                    self.delivered_at = self.delivered_at.or(Some(at));
                }
                _ => self.plan_queued_at = None,
            }
            self.updated = at;
            self.history.push(change.clone());
            taken.push(change);
        }
        taken
    }

    /// The planned moves due by `until` (all of them when `None`), oldest first, as (when,
    /// to what): `sent`, then `remote-queued`, then `delivered`.
    pub fn planned(&self, until: Option<Timestamp>) -> Vec<(Timestamp, SmsStatus)> {
        let due = |at: Option<Timestamp>| at.filter(|at| until.is_none_or(|u| *at <= u));
        [
            (due(self.plan_sent_at), SmsStatus::Sent),
            (due(self.plan_queued_at), SmsStatus::RemoteQueued),
            (due(self.plan_delivered_at), SmsStatus::Delivered),
        ]
        .into_iter()
        .map_while(|(at, status)| at.map(|at| (at, status)))
        .collect()
    }
}

/// The `history` column read as its moves.
trait HistoryColumn {
    fn history(&self, i: usize) -> Result<Vec<StatusChange>, DbError>;
}

impl HistoryColumn for Row {
    fn history(&self, i: usize) -> Result<Vec<StatusChange>, DbError> {
        parse_history(&self.text(i)?)
    }
}

crate::row_decoder! {
    const COLUMNS; fn from_row -> Sms {
        id: int("id"),
        sid: sid("sid"),
        account_id: int("account_id"),
        direction: text("direction"),
        from: text("sender"),
        to: text("recipient"),
        body: text("body"),
        encoding: text("encoding"),
        parts: int("parts"),
        traffic_type: opt_text("traffic_type"),
        status: text("status"),
        status_error: text("status_error"),
        user_data: opt_text("user_data"),
        flash: bool("flash"),
        webhook_url: opt_text("webhook_url"),
        billing_debit: money("billing_debit"),
        carrier: text("carrier"),
        next_at: opt_timestamp("next_at"),
        created: timestamp("created"),
        updated: timestamp("updated"),
        sent_at: opt_timestamp("sent_at"),
        delivered_at: opt_timestamp("delivered_at"),
        history: history("history"),
        plan_sent_at: opt_timestamp("plan_sent_at"),
        plan_queued_at: opt_timestamp("plan_queued_at"),
        plan_delivered_at: opt_timestamp("plan_delivered_at"),
    }
}

/// What it takes to store an SMS.
#[derive(Debug, Clone)]
pub struct NewSms {
    /// Owner.
    pub account_id: i64,
    /// `outbound` or `inbound`.
    pub direction: &'static str,
    /// Sender.
    pub from: String,
    /// Recipient.
    pub to: String,
    /// Text.
    pub body: String,
    /// `gsm` or `unicode`.
    pub encoding: &'static str,
    /// Parts.
    pub parts: i64,
    /// Traffic type (outbound).
    pub traffic_type: Option<&'static str>,
    /// Initial status.
    pub status: &'static str,
    /// Customer data.
    pub user_data: Option<String>,
    /// Flash SMS.
    pub flash: bool,
    /// Per-SMS webhook.
    pub webhook_url: Option<String>,
    /// Cost.
    pub billing_debit: Money,
    /// Carrier name.
    pub carrier: String,
    /// When the worker should first act.
    pub next_at: Option<Timestamp>,
    /// When received (inbound).
    pub delivered_at: Option<Timestamp>,
    /// The moves it is stored with, oldest first: none as a rule; the network's taking of it
    /// when a network that answers without I/O took it in the transaction that stores it
    /// (the simulated network). Its last move's time is the SMS's `updated`.
    pub history: Vec<StatusChange>,
    /// How the network that took it as it was stored names its parts, from the SMS's sid and
    /// the part's number (from 1): its `message_ids` are written with the sid the insert
    /// draws. `None`: no network has it yet.
    pub part_ids: Option<fn(&str, usize) -> String>,
    /// The simulated network's `sent` planned at this time (see [`Sms::take_planned`]).
    pub plan_sent_at: Option<Timestamp>,
    /// Its `remote-queued` planned at this time.
    pub plan_queued_at: Option<Timestamp>,
    /// Its `delivered` planned at this time (then `next_at` is `None`).
    pub plan_delivered_at: Option<Timestamp>,
}

/// The columns an SMS is inserted with, in the order of [`insert`]'s parameters.
const INSERT_COLUMNS: &str = "sid, account_id, direction, sender, recipient, body, encoding, parts, traffic_type, status, \
     user_data, flash, webhook_url, billing_debit, carrier, next_at, created, updated, delivered_at, history, message_ids, \
     plan_sent_at, plan_queued_at, plan_delivered_at";

impl NewSms {
    /// When it last changed: its last move, else its creation at `now`.
    fn updated(&self, now: Timestamp) -> Timestamp {
        self.history.last().map_or(now, |m| m.at)
    }

    /// Its stored history ([`parse_history`]'s form).
    fn history_text(&self) -> String {
        self.history
            .iter()
            .map(|m| history_line(&m.old_status, &m.new_status, m.at))
            .collect()
    }

    /// The network's ids of its parts, stored with `sid` (see [`NewSms::part_ids`]).
    fn message_ids(&self, sid: &Sid) -> Option<String> {
        self.part_ids.map(|name| {
            (1..=usize::try_from(self.parts).unwrap_or(0))
                .map(|part| name(sid.as_str(), part))
                .collect::<Vec<_>>()
                .join(",")
        })
    }
}

/// Stores a new SMS (with a fresh sid).
pub fn insert(conn: &mut dyn Conn, new: &NewSms, now: Timestamp) -> Result<Sms, DbError> {
    insert_many(conn, &[(new.clone(), now)])?
        .pop()
        .ok_or_else(|| DbError::Other("an SMS insert wrote no row".into()))
}

/// The SMS as [`insert`] wrote it: exactly what was written, so it is not read back.
fn stored(id: i64, sid: Sid, new: &NewSms, now: Timestamp) -> Sms {
    Sms {
        id,
        sid,
        account_id: new.account_id,
        direction: new.direction.to_owned(),
        from: new.from.clone(),
        to: new.to.clone(),
        body: new.body.clone(),
        encoding: new.encoding.to_owned(),
        parts: new.parts,
        traffic_type: new.traffic_type.map(str::to_owned),
        status: new.status.to_owned(),
        status_error: String::new(),
        user_data: new.user_data.clone(),
        flash: new.flash,
        webhook_url: new.webhook_url.clone(),
        billing_debit: new.billing_debit,
        carrier: new.carrier.clone(),
        next_at: new.next_at,
        created: now,
        updated: new.updated(now),
        sent_at: None,
        delivered_at: new.delivered_at,
        history: new.history.clone(),
        plan_sent_at: new.plan_sent_at,
        plan_queued_at: new.plan_queued_at,
        plan_delivered_at: new.plan_delivered_at,
    }
}

/// How many times [`insert_many`] draws another sid for an SMS whose sid was taken (the
/// clock part of a sid wraps every 7.8 minutes, so a busy platform meets taken sids daily).
const SID_DRAWS: usize = 16;

/// Stores many new SMS, each with its creation time and a fresh sid, and gives them as
/// stored, in order: on PostgreSQL one statement for any number (the columns bound as
/// arrays), on SQLite one prepared insert each (no round trips there). An SMS whose sid was
/// taken is written again with another (`ON CONFLICT DO NOTHING` leaves the transaction
/// usable), so the caller learns an SMS's sid only from what this gives back.
pub fn insert_many(conn: &mut dyn Conn, rows: &[(NewSms, Timestamp)]) -> Result<Vec<Sms>, DbError> {
    insert_many_drawing(conn, rows, &mut Sid::generate)
}

/// [`insert_many`] with the sids drawn by `draw` (a test draws taken ones).
pub fn insert_many_drawing(
    conn: &mut dyn Conn,
    rows: &[(NewSms, Timestamp)],
    draw: &mut dyn FnMut() -> Sid,
) -> Result<Vec<Sms>, DbError> {
    let dialect = conn.dialect();
    let stored_rows = crate::sql::with_redraws(rows.len(), SID_DRAWS, |todo| {
        let drawn: Vec<(Sid, &NewSms, Timestamp)> = todo
            .iter()
            .map(|&i| (draw(), &rows[i].0, rows[i].1))
            .collect();
        let ids = match dialect {
            Dialect::Postgres => insert_unnested(conn, &drawn)?,
            Dialect::Sqlite => drawn
                .iter()
                .map(|(sid, new, now)| insert_one(conn, sid, new, *now))
                .collect::<Result<_, _>>()?,
        };
        Ok::<_, DbError>(
            drawn
                .into_iter()
                .zip(ids)
                .map(|((sid, new, now), id)| id.map(|id| stored(id, sid, new, now)))
                .collect(),
        )
    })?;
    let stored_rows: Vec<Sms> = stored_rows
        .into_iter()
        .map(|s| s.ok_or_else(|| DbError::Other("no free sid for an SMS".into())))
        .collect::<Result<_, _>>()?;
    // PostgreSQL queued them with their insert; SQLite's queue is their `next_at`.
    Ok(stored_rows)
}

/// Deletes SMS the caller's transaction just inserted and then refused (their debit found
/// the credit short): nothing refers to them yet.
pub fn delete_new(conn: &mut dyn Conn, ids: &[i64]) -> Result<(), DbError> {
    if ids.is_empty() {
        return Ok(());
    }
    let dialect = conn.dialect();
    let (among, params) = crate::sql::in_list(dialect, "id", 1, crate::sql::ids(ids));
    let sql = match dialect {
        // Its message and its state (which is its queue row), in one statement.
        Dialect::Postgres => {
            let (state_among, _) = crate::sql::in_list(dialect, "sms_id", 1, crate::sql::ids(ids));
            format!(
                "WITH state AS (DELETE FROM sms_state WHERE {state_among}) \
                 DELETE FROM sms_message WHERE {among}"
            )
        }
        // SQLite's queue is the SMS's `next_at` (migration 0033).
        Dialect::Sqlite => format!("DELETE FROM sms WHERE {among}"),
    };
    conn.execute(&sql, &params)?;
    Ok(())
}

/// Sets when the worker next acts on an SMS (a lease, a retry; `None`: never). That time is
/// the SMS's place in the worker's queue too (`sms_queue`).
pub fn reschedule(conn: &mut dyn Conn, id: i64, next_at: Option<Timestamp>) -> Result<(), DbError> {
    let sql = match conn.dialect() {
        Dialect::Postgres => "UPDATE sms_state SET next_at = $1 WHERE sms_id = $2",
        Dialect::Sqlite => "UPDATE sms SET next_at = $1 WHERE id = $2",
    };
    conn.execute(sql, params![next_at, id])?;
    Ok(())
}

/// Records the network's ids of the parts of an SMS it took (kept for its receipts).
pub fn set_message_ids(conn: &mut dyn Conn, id: i64, message_ids: &str) -> Result<(), DbError> {
    let sql = match conn.dialect() {
        Dialect::Postgres => "UPDATE sms_state SET message_ids = $1 WHERE sms_id = $2",
        Dialect::Sqlite => "UPDATE sms SET message_ids = $1 WHERE id = $2",
    };
    conn.execute(sql, params![message_ids, id])?;
    Ok(())
}

/// One SMS with the sid given; `None` when the sid was taken.
fn insert_one(
    conn: &mut dyn Conn,
    sid: &Sid,
    new: &NewSms,
    now: Timestamp,
) -> Result<Option<i64>, DbError> {
    conn.insert_id(
        &format!(
            "INSERT INTO sms ({INSERT_COLUMNS}) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24) \
             ON CONFLICT (sid) DO NOTHING"
        ),
        params![
            sid,
            new.account_id,
            new.direction,
            &new.from,
            &new.to,
            &new.body,
            new.encoding,
            new.parts,
            new.traffic_type,
            new.status,
            new.user_data.clone(),
            new.flash,
            new.webhook_url.clone(),
            new.billing_debit,
            &new.carrier,
            new.next_at,
            now,
            new.updated(now),
            new.delivered_at,
            new.history_text(),
            new.message_ids(sid),
            new.plan_sent_at,
            new.plan_queued_at,
            new.plan_delivered_at
        ],
    )
}

/// [`insert_many`] on PostgreSQL: one statement inserting from `UNNEST(...)` each SMS's
/// message (`sms_message`) and its state (`sms_state`, its queue row too); the id of each
/// row, `None` where its sid was taken (matched by sid: `RETURNING` promises no order).
fn insert_unnested(
    conn: &mut dyn Conn,
    rows: &[(Sid, &NewSms, Timestamp)],
) -> Result<Vec<Option<i64>>, DbError> {
    let news = || rows.iter().map(|(_, n, _)| *n);
    let text = |f: fn(&NewSms) -> Option<String>| news().map(f);
    let int = |f: fn(&NewSms) -> Option<i64>| news().map(f);
    let columns = crate::sql::Columns::new()
        .text(
            "sid",
            rows.iter().map(|(sid, _, _)| Some(sid.as_str().to_owned())),
        )
        .int("account_id", int(|n| Some(n.account_id)))
        .text("direction", text(|n| Some(n.direction.to_owned())))
        .text("sender", text(|n| Some(n.from.clone())))
        .text("recipient", text(|n| Some(n.to.clone())))
        .text("body", text(|n| Some(n.body.clone())))
        .text("encoding", text(|n| Some(n.encoding.to_owned())))
        .int("parts", int(|n| Some(n.parts)))
        .text("traffic_type", text(|n| n.traffic_type.map(str::to_owned)))
        .text("status", text(|n| Some(n.status.to_owned())))
        .text("user_data", text(|n| n.user_data.clone()))
        .bool("flash", news().map(|n| n.flash))
        .text("webhook_url", text(|n| n.webhook_url.clone()))
        .int("billing_debit", int(|n| Some(n.billing_debit.units())))
        .text("carrier", text(|n| Some(n.carrier.clone())))
        .int("next_at", int(|n| n.next_at.map(Timestamp::millis)))
        .int(
            "delivered_at",
            int(|n| n.delivered_at.map(Timestamp::millis)),
        )
        .int("created", rows.iter().map(|(_, _, now)| Some(now.millis())))
        .int(
            "updated",
            rows.iter()
                .map(|(_, n, now)| Some(n.updated(*now).millis())),
        )
        .text("history", text(|n| Some(n.history_text())))
        .text(
            "message_ids",
            rows.iter().map(|(sid, n, _)| n.message_ids(sid)),
        )
        .int(
            "plan_sent_at",
            int(|n| n.plan_sent_at.map(Timestamp::millis)),
        )
        .int(
            "plan_queued_at",
            int(|n| n.plan_queued_at.map(Timestamp::millis)),
        )
        .int(
            "plan_delivered_at",
            int(|n| n.plan_delivered_at.map(Timestamp::millis)),
        );
    // The SMS's messages and states in one statement. Each row is given its id first (the
    // same sequence as the message's identity), so its state is written by that id: a sid
    // given twice is written once, and only the state of the row whose message was written
    // (the id `ins` returns) goes with it.
    let sql = format!(
        "WITH t AS (SELECT nextval('sms_message_id_seq') AS id, * FROM {}), \
         ins AS (INSERT INTO sms_message (id, sid, account_id, direction, sender, recipient, body, \
         encoding, parts, traffic_type, user_data, flash, webhook_url, billing_debit, carrier, created) \
         OVERRIDING SYSTEM VALUE \
         SELECT id, sid, account_id, direction, sender, recipient, body, encoding, parts, traffic_type, \
         user_data, flash, webhook_url, billing_debit, carrier, created FROM t \
         ON CONFLICT (sid) DO NOTHING RETURNING id, sid), \
         state AS (INSERT INTO sms_state (sms_id, account_id, status, message_ids, next_at, updated, \
         delivered_at, history, plan_sent_at, plan_queued_at, plan_delivered_at) \
         SELECT id, account_id, status, message_ids, next_at, updated, delivered_at, history, \
         plan_sent_at, plan_queued_at, plan_delivered_at FROM t \
         WHERE id IN (SELECT id FROM ins)) \
         SELECT id, sid FROM ins",
        columns.unnest("u", 1)
    );
    let mut by_sid = std::collections::HashMap::with_capacity(rows.len());
    for row in conn.query(&sql, &columns.into_params())? {
        by_sid.insert(row.text(1)?, row.int(0)?);
    }
    // `remove`: a sid given twice is written once, and only its first row has it.
    Ok(rows
        .iter()
        .map(|(sid, _, _)| by_sid.remove(sid.as_str()))
        .collect())
}

/// An SMS of the account, as it is at `now` ([`Sms::as_of`]).
pub fn get(
    conn: &mut dyn Conn,
    account_id: i64,
    sid: &Sid,
    now: Timestamp,
) -> Result<Option<Sms>, DbError> {
    conn.query_opt(
        &format!("SELECT {COLUMNS} FROM sms WHERE account_id = $1 AND sid = $2"),
        params![account_id, sid],
    )?
    .map(|r| from_row(&r).map(|sms| sms.as_of(now)))
    .transpose()
}

/// An SMS by its internal key, as it is at `now` ([`Sms::as_of`]).
pub fn by_id(conn: &mut dyn Conn, id: i64, now: Timestamp) -> Result<Option<Sms>, DbError> {
    conn.query_opt(
        &format!("SELECT {COLUMNS} FROM sms WHERE id = $1"),
        params![id],
    )?
    .map(|r| from_row(&r).map(|sms| sms.as_of(now)))
    .transpose()
}

/// The columns of an SMS ([`COLUMNS`]) on PostgreSQL named with their tables: the state's
/// from `s` (`sms_state`), the message's from `message` (`sms_message` or a window of it),
/// for the statements that join the two tables themselves instead of reading the view `sms`.
fn qualified_columns(message: &str) -> String {
    const STATE: [&str; 10] = [
        "plan_sent_at",
        "plan_queued_at",
        "plan_delivered_at",
        "status",
        "status_error",
        "next_at",
        "updated",
        "sent_at",
        "delivered_at",
        "history",
    ];
    COLUMNS
        .split(", ")
        .map(|c| {
            let table = if STATE.contains(&c) { "s" } else { message };
            format!("{table}.{c}")
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The columns of an SMS and the join of its two tables on PostgreSQL (`sms_message m`,
/// `sms_state s`, migration 0036), for the statements that lock an SMS: they lock its
/// state (`FOR UPDATE OF s`), which is all a move writes. Through the view `sms` a lock
/// would take the message's row too, a write (and WAL) of a row nothing changes. A locking
/// read at the top of the statement reads the state as it is once locked (PostgreSQL reads
/// a row again that changed before its lock was taken).
static STATE_LOCKING: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    format!(
        "{} FROM sms_message m JOIN sms_state s ON s.sms_id = m.id",
        qualified_columns("m")
    )
});

/// An SMS by its internal key, locked until the transaction ends (on PostgreSQL; SQLite's
/// single writer serialises anyway): what moves an SMS outside the worker's claim (a
/// receipt, the end of a submission) reads it so, and so sees the other's move. Read as
/// stored: only SMS of real networks are moved so, and they have no planned moves.
pub fn by_id_locked(conn: &mut dyn Conn, id: i64) -> Result<Option<Sms>, DbError> {
    let sql = match conn.dialect() {
        Dialect::Postgres => format!(
            "SELECT {} WHERE s.sms_id = $1 FOR UPDATE OF s",
            *STATE_LOCKING
        ),
        Dialect::Sqlite => format!("SELECT {COLUMNS} FROM sms WHERE id = $1"),
    };
    conn.query_opt(&sql, params![id])?
        .map(|r| from_row(&r))
        .transpose()
}

/// One status move.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusChange {
    /// Before.
    pub old_status: String,
    /// After.
    pub new_status: String,
    /// When.
    pub at: Timestamp,
}

/// Reads the stored status history: a line `old new at` per move, `at` in Unix milliseconds
/// (statuses are single words). The statement moving a status appends its line, so a move
/// needs no read and no second statement.
pub fn parse_history(text: &str) -> Result<Vec<StatusChange>, DbError> {
    text.lines()
        .map(|line| {
            let mut words = line.split(' ');
            let (Some(old), Some(new), Some(at), None) =
                (words.next(), words.next(), words.next(), words.next())
            else {
                return Err(DbError::Other(format!("bad SMS history line {line:?}")));
            };
            let at = at
                .parse::<i64>()
                .map_err(|_| DbError::Other(format!("bad SMS history time {at:?}")))?;
            Ok(StatusChange {
                old_status: old.to_owned(),
                new_status: new.to_owned(),
                at: Timestamp::from_millis(at),
            })
        })
        .collect()
}

/// A moved SMS's new state, written with the others of its batch by [`write_states`].
#[derive(Debug, Clone, PartialEq)]
pub struct StateWrite {
    /// Internal key of the SMS.
    pub id: i64,
    /// Its account (the worker's hint of when it is next due is kept by account).
    pub account_id: i64,
    /// Status after the moves.
    pub status: String,
    /// Why it failed, when it did.
    pub status_error: String,
    /// When the worker acts next.
    pub next_at: Option<Timestamp>,
    /// Time of the last move.
    pub updated: Timestamp,
    /// When the carrier took it (kept when already set).
    pub sent_at: Option<Timestamp>,
    /// When it was delivered (kept when already set).
    pub delivered_at: Option<Timestamp>,
    /// The moves' lines ([`history_line`]), appended to the stored history.
    pub history_lines: String,
    /// The network's ids of its parts, when it just took the SMS (kept when `None`).
    pub message_ids: Option<String>,
}

/// The stored form of one move (see [`parse_history`]).
pub fn history_line(old: &str, new: &str, at: Timestamp) -> String {
    format!("{old} {new} {}\n", at.millis())
}

/// The `UPDATE` of [`write_states`] on PostgreSQL, from a table `v` of new states: the SMS's
/// state row alone (its message is not written), which is also its queue row.
const STATE_UPDATE: &str = "UPDATE sms_state s SET status = v.status, status_error = v.status_error, \
     next_at = v.next_at, updated = v.updated, sent_at = COALESCE(s.sent_at, v.sent_at), \
     delivered_at = COALESCE(s.delivered_at, v.delivered_at), history = s.history || v.lines, \
     message_ids = COALESCE(v.message_ids, s.message_ids), plan_sent_at = NULL, \
     plan_queued_at = NULL, plan_delivered_at = NULL";

/// Writes the new states of moved SMS, one state per SMS (`Moves` keeps the last), which are
/// their places in the queue too: on PostgreSQL one statement for any number (the columns
/// bound as arrays), on SQLite one statement a state.
pub fn write_states(conn: &mut dyn Conn, states: &[StateWrite]) -> Result<(), DbError> {
    use crate::sql::Columns;
    if states.is_empty() {
        return Ok(());
    }
    if conn.dialect() == Dialect::Postgres {
        let ts = |f: fn(&StateWrite) -> Option<Timestamp>| {
            states.iter().map(move |w| f(w).map(Timestamp::millis))
        };
        let columns = Columns::new()
            .int("id", states.iter().map(|w| Some(w.id)))
            .text("status", states.iter().map(|w| Some(w.status.clone())))
            .text(
                "status_error",
                states.iter().map(|w| Some(w.status_error.clone())),
            )
            .int("next_at", ts(|w| w.next_at))
            .int("updated", ts(|w| Some(w.updated)))
            .int("sent_at", ts(|w| w.sent_at))
            .int("delivered_at", ts(|w| w.delivered_at))
            .text(
                "lines",
                states.iter().map(|w| Some(w.history_lines.clone())),
            )
            .text("message_ids", states.iter().map(|w| w.message_ids.clone()));
        let sql = format!(
            "{STATE_UPDATE} FROM {} WHERE s.sms_id = v.id",
            columns.unnest("v", 1)
        );
        conn.execute(&sql, &columns.into_params())?;
        return Ok(());
    }
    // SQLite: one prepared statement run once a state. In process there is no round trip to
    // save, and a multi-row `UPDATE ... FROM (VALUES ...)` costs more a row: a statement
    // text a batch size (parsed again when the size is new), the values and the join each
    // collected in a temporary table.
    for w in states {
        conn.execute(
            "UPDATE sms SET status = $1, status_error = $2, next_at = $3, updated = $4, \
             sent_at = COALESCE(sent_at, $5), delivered_at = COALESCE(delivered_at, $6), \
             history = history || $7, message_ids = COALESCE($8, message_ids), \
             plan_sent_at = NULL, plan_queued_at = NULL, plan_delivered_at = NULL WHERE id = $9",
            params![
                w.status.as_str(),
                w.status_error.as_str(),
                w.next_at,
                w.updated,
                w.sent_at,
                w.delivered_at,
                w.history_lines.as_str(),
                w.message_ids.as_deref(),
                w.id
            ],
        )?;
    }
    // SQLite's queue is `next_at`, just written (migration 0033).
    Ok(())
}

/// Longest flight (from its taking to its delivery) of an SMS whose delivery is planned
/// ([`Sms::take_planned`]; the simulated network's default is 600 ms): what
/// [`unplan_deliveries`] reads is the account's SMS of that long, and
/// [`NODE_CLOCKS_APART_MS`] more, whatever its volume before.
pub const PLANNED_FLIGHT_MAX_MS: i64 = 2_000;

/// How far apart the clocks of two nodes may be for [`unplan_deliveries`] to find an SMS
/// another node planned.
pub const NODE_CLOCKS_APART_MS: i64 = 1_000;

/// The key of the advisory lock (PostgreSQL) that orders the planning of an account's
/// deliveries against what makes them visits again ([`unplan_deliveries`]).
fn plans_lock_key(account_id: i64) -> i64 {
    crate::sql::lock_key(format!("sms plans\n{account_id}").as_bytes())
}

/// What an intake of SMS reads first, in one statement on PostgreSQL (its first round
/// trip): see [`intake_reads`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IntakeReads {
    /// The rate table's version (`rates_version`).
    pub rates_version: i64,
    /// What authentication reads' version (`auth_version`).
    pub auth_version: i64,
    /// Of the recipients asked about, those a number of this platform's inventory with an
    /// owner is: delivery to one reaches its owner, so an SMS to it is not planned to its
    /// delivery.
    pub owned: std::collections::HashSet<String>,
}

/// The versions an intake checks its prices and keys against, and which of `recipients` are
/// numbers of this platform with an owner. On PostgreSQL the same statement takes, shared
/// until the transaction ends, the plan locks of `accounts` (whose SMS may be planned to
/// their delivery): a subscription or a console feed of one of them, on any node, then
/// either is seen by this transaction's later reads of who receives their moves, or waits
/// for it to commit and finds its planned deliveries ([`unplan_deliveries`]).
pub fn intake_reads(
    conn: &mut dyn Conn,
    accounts: &[i64],
    recipients: &[String],
) -> Result<IntakeReads, DbError> {
    const VERSIONS: &str =
        "(SELECT version FROM rates_version), (SELECT version FROM auth_version)";
    let (row, owned) = match conn.dialect() {
        Dialect::Postgres => {
            let keys: Vec<i64> = accounts.iter().map(|a| plans_lock_key(*a)).collect();
            let list = crate::sql::Array::Text(recipients.iter().cloned().map(Some).collect());
            // Numbers hold no comma.
            let row = conn.query_one(
                &format!(
                    "SELECT {VERSIONS}, \
                     (SELECT string_agg(e164, ',') FROM numbers \
                      WHERE e164 = ANY($2::text[]) AND account_id IS NOT NULL), \
                     (SELECT count(pg_advisory_xact_lock_shared(k)) FROM unnest($1::bigint[]) k)"
                ),
                &[Value::Array(crate::sql::ids(&keys)), Value::Array(list)],
            )?;
            let owned = row
                .opt_text(2)?
                .map(|s| s.split(',').map(str::to_owned).collect())
                .unwrap_or_default();
            (row, owned)
        }
        Dialect::Sqlite => {
            let row = conn.query_one(&format!("SELECT {VERSIONS}"), params![])?;
            let owned = crate::numbers::owned::owners_of(conn, recipients)?
                .into_iter()
                .filter_map(|(e164, owner)| owner.map(|_| e164))
                .collect();
            (row, owned)
        }
    };
    Ok(IntakeReads {
        rates_version: row.int(0)?,
        auth_version: row.int(1)?,
        owned,
    })
}

/// Makes the planned deliveries of the account's SMS that are still to come visits of the
/// worker again (due at their planned time, with their planned `sent` and `remote-queued`
/// still written by that visit): something now receives their moves (a subscription to
/// `sms.mt.status_update`, a console feed opened). Deliveries planned at or before `now`
/// have happened; their events had nobody to reach. On PostgreSQL it first takes the
/// account's plan lock, exclusive until the transaction ends: an intake on another node that
/// may have planned deliveries of the account without seeing what this transaction adds has
/// committed before this looks for them (see [`intake_reads`]). Returns
/// how many SMS it changed.
pub fn unplan_deliveries(
    conn: &mut dyn Conn,
    account_id: i64,
    now: Timestamp,
) -> Result<u64, DbError> {
    let since = now.plus_ms(-(PLANNED_FLIGHT_MAX_MS + NODE_CLOCKS_APART_MS));
    match conn.dialect() {
        Dialect::Postgres => {
            conn.query(
                "SELECT pg_advisory_xact_lock($1) IS NULL",
                params![plans_lock_key(account_id)],
            )?;
            conn.execute(
                "UPDATE sms_state s SET next_at = s.plan_delivered_at, plan_delivered_at = NULL \
                 FROM sms_message m WHERE m.id = s.sms_id AND m.account_id = $1 \
                 AND m.direction = 'outbound' AND m.created >= $2 AND s.plan_delivered_at > $3",
                params![account_id, since, now],
            )
        }
        Dialect::Sqlite => conn.execute(
            "UPDATE sms SET next_at = plan_delivered_at, plan_delivered_at = NULL \
             WHERE account_id = $1 AND direction = 'outbound' AND created >= $2 \
             AND plan_delivered_at > $3",
            params![account_id, since, now],
        ),
    }
}

/// Outbound SMS no network has taken yet (`created` or `pending`), by the network they are
/// routed to: (network, how many, the oldest's creation).
pub fn unsent_by_network(conn: &mut dyn Conn) -> Result<Vec<(String, i64, Timestamp)>, DbError> {
    conn.query(
        "SELECT carrier, count(*), min(created) FROM sms_queue q JOIN sms ON sms.id = q.sms_id \
         WHERE status IN ('created', 'pending') AND plan_sent_at IS NULL \
         GROUP BY carrier ORDER BY carrier",
        params![],
    )?
    .iter()
    .map(|r| Ok((r.text(0)?, r.int(1)?, r.timestamp(2)?)))
    .collect()
}

/// Up to `limit` outbound SMS routed to `network` that no network has taken yet.
pub fn unsent_of_network(
    conn: &mut dyn Conn,
    network: &str,
    limit: i64,
) -> Result<Vec<Sms>, DbError> {
    conn.query(
        &format!(
            "SELECT {COLUMNS} FROM (SELECT sms_id FROM sms_queue) q JOIN sms ON sms.id = q.sms_id \
             WHERE status IN ('created', 'pending') AND plan_sent_at IS NULL \
             AND carrier = $1 ORDER BY id LIMIT {limit}{}",
            match conn.dialect() {
                Dialect::Postgres => " FOR UPDATE OF sms",
                Dialect::Sqlite => "",
            }
        ),
        params![network],
    )?
    .iter()
    .map(from_row)
    .collect()
}

/// Moves an SMS to another network (its own is gone).
pub fn set_carrier(conn: &mut dyn Conn, id: i64, carrier: &str) -> Result<(), DbError> {
    let sql = match conn.dialect() {
        Dialect::Postgres => "UPDATE sms_message SET carrier = $1 WHERE id = $2",
        Dialect::Sqlite => "UPDATE sms SET carrier = $1 WHERE id = $2",
    };
    conn.execute(sql, params![carrier, id])?;
    Ok(())
}

/// Takes up to `limit` SMS whose next step is due, found through the queue (`sms_queue`)
/// a fair share of each account's ([`sms_queue::due_ids`](crate::sms_queue::due_ids): the
/// walk starts after `after_account`), locked against other nodes until the transaction
/// ends (PostgreSQL: `SKIP LOCKED`, an SMS another node holds is left to it), soonest first.
/// `skip`: SMS this transaction already claimed. Also gives the account the next walk
/// starts after.
pub fn due(
    conn: &mut dyn Conn,
    now: Timestamp,
    limit: usize,
    after_account: i64,
    skip: &std::collections::HashSet<i64>,
) -> Result<(Vec<Sms>, i64), DbError> {
    let walk = crate::sms_queue::due_ids(conn, now, limit, after_account, skip)?;
    Ok((due_among(conn, now, &walk.ids)?, walk.last_account))
}

/// Of the SMS `ids`, those due at `now` as stored (their planned moves not applied: the
/// worker writes them), claimed as [`due`] claims them (on PostgreSQL,
/// locked, skipping any another transaction holds). Found through the primary key only, and
/// due by their own `next_at`: a claim of the SMS a node knows to be due does not walk the
/// entries that its earlier moves left dead at the head of the queue's due index (see
/// `sms_due` in docs/benchmarks.md).
pub fn due_among(conn: &mut dyn Conn, now: Timestamp, ids: &[i64]) -> Result<Vec<Sms>, DbError> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    match conn.dialect() {
        Dialect::Postgres => {
            let (among, list) =
                crate::sql::in_list(Dialect::Postgres, "sms_id", 2, crate::sql::ids(ids));
            let mut params = vec![now.into()];
            params.extend(list);
            conn.query(
                &format!(
                    "SELECT {} WHERE s.{among} AND s.next_at <= $1 \
                     ORDER BY s.next_at FOR UPDATE OF s SKIP LOCKED",
                    *STATE_LOCKING
                ),
                &params,
            )?
            .iter()
            .map(from_row)
            .collect()
        }
        // In process there is no round trip to save: one prepared lookup by key per SMS
        // costs less than an `IN` list of them, which SQLite collects into a temporary
        // index, and sorts, with a statement text (and a prepare) for each length of list.
        Dialect::Sqlite => {
            static ONE: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
                format!(
                    "SELECT {COLUMNS} FROM sms WHERE id = $1 AND COALESCE(next_at, 9223372036854775807) <= $2"
                )
            });
            let mut due = Vec::with_capacity(ids.len());
            for &id in ids {
                if let Some(row) = conn.query_opt(&ONE, params![id, now])? {
                    due.push(from_row(&row)?);
                }
            }
            due.sort_by_key(|sms| sms.next_at);
            Ok(due)
        }
    }
}

/// A column whose value as reads show it depends on the planned moves due (see
/// [`Sms::as_of`]), for the statements that filter or sort by it.
#[derive(Debug, Clone, Copy)]
enum AsRead {
    Status,
    Updated,
}

/// Appends `column` as it is at `now`: the last planned move due by then, else the stored
/// value (what [`Sms::take_planned`] does to a row read).
fn push_as_read(q: &mut SqlBuilder, column: AsRead, now: Timestamp) {
    let (delivered, queued, sent, stored) = match column {
        AsRead::Status => ("'delivered'", "'remote-queued'", "'sent'", "status"),
        AsRead::Updated => (
            "plan_delivered_at",
            "plan_queued_at",
            "plan_sent_at",
            "updated",
        ),
    };
    q.push("(CASE WHEN plan_delivered_at <= ")
        .bind(now)
        .push(&format!(" THEN {delivered} WHEN plan_queued_at <= "))
        .bind(now)
        .push(&format!(" THEN {queued} WHEN plan_sent_at <= "))
        .bind(now)
        .push(&format!(" THEN {sent} ELSE {stored} END)"));
}

/// Filters of an SMS search.
#[derive(Debug, Clone, Default)]
pub struct SmsFilter {
    /// `outbound` or `inbound`.
    pub direction: String,
    /// Created at or after.
    pub created_after: Option<Timestamp>,
    /// Created at or before.
    pub created_before: Option<Timestamp>,
    /// Exact sender.
    pub from: Option<String>,
    /// Exact recipient.
    pub to: Option<String>,
    /// Text the body contains.
    pub contains: Option<String>,
    /// Traffic type word.
    pub traffic_type: Option<String>,
    /// Status word.
    pub status: Option<String>,
}

/// The conditions an index serves: account, direction, time, recipient; of the SMS in
/// `table` (`sms`, or on PostgreSQL `sms_message`, which holds those columns and their
/// indexes).
fn indexed(table: &str, account_id: i64, f: &SmsFilter) -> SqlBuilder {
    let mut q = SqlBuilder::new(&format!("FROM {table} WHERE account_id = "));
    q.bind(account_id);
    q.push(" AND direction = ").bind(f.direction.as_str());
    if let Some(t) = f.created_after {
        q.push(" AND created >= ").bind(t);
    }
    if let Some(t) = f.created_before {
        q.push(" AND created <= ").bind(t);
    }
    if let Some(to) = &f.to {
        q.push(" AND recipient = ").bind(to.as_str());
    }
    q
}

impl SmsFilter {
    /// Whether the filter has conditions no index serves (they read rows one by one).
    fn narrows(&self) -> bool {
        self.from.is_some()
            || self.traffic_type.is_some()
            || self.status.is_some()
            || self.contains.is_some()
    }

    /// Appends the conditions no index serves: sender, traffic type, status, body text.
    fn narrow(&self, q: &mut SqlBuilder, dialect: crate::sql::Dialect, now: Timestamp) {
        if let Some(from) = &self.from {
            q.push(" AND sender = ").bind(from.as_str());
        }
        if let Some(t) = &self.traffic_type {
            q.push(" AND traffic_type = ").bind(t.as_str());
        }
        if let Some(s) = &self.status {
            q.push(" AND ");
            push_as_read(q, AsRead::Status, now);
            q.push(" = ").bind(s.as_str());
        }
        if let Some(text) = &self.contains {
            search::push_contains(q, dialect, "body", text);
        }
    }
}

fn filtered(conn: &mut dyn Conn, account_id: i64, f: &SmsFilter, now: Timestamp) -> SqlBuilder {
    let mut q = indexed("sms", account_id, f);
    f.narrow(&mut q, conn.dialect(), now);
    q
}

/// A page of the account's SMS, as they are at `now` ([`Sms::as_of`]).
pub fn search(
    conn: &mut dyn Conn,
    account_id: i64,
    f: &SmsFilter,
    paging: &Paging,
    now: Timestamp,
) -> Result<(i64, Vec<Sms>), DbError> {
    let q = filtered(conn, account_id, f, now);
    let (total, rows) = search::page_sorted_by(conn, COLUMNS, &q, "id", paging, &|q| match paging
        .sort_column
    {
        "updated" => push_as_read(q, AsRead::Updated, now),
        column => {
            q.push(column);
        }
    })?;
    let as_of = |r: &Row| from_row(r).map(|sms| sms.as_of(now));
    Ok((total, rows.iter().map(as_of).collect::<Result<_, _>>()?))
}

/// Up to `limit` SMS matching, oldest first (the earlier interfaces' unpaged lists), as they are
/// at `now`.
pub fn list(
    conn: &mut dyn Conn,
    account_id: i64,
    f: &SmsFilter,
    limit: i64,
    now: Timestamp,
) -> Result<Vec<Sms>, DbError> {
    let mut q = filtered(conn, account_id, f, now);
    q.push(" ORDER BY created, id LIMIT ").bind(limit);
    conn.query(&format!("SELECT {COLUMNS} {}", q.sql()), q.params())?
        .iter()
        .map(|r| from_row(r).map(|sms| sms.as_of(now)))
        .collect()
}

/// Approves an alphanumeric sender for an account.
pub fn approve_sender(
    conn: &mut dyn Conn,
    account_id: i64,
    sender: &str,
    now: Timestamp,
) -> Result<(), DbError> {
    conn.execute(
        "INSERT INTO approved_senders (account_id, sender, created) VALUES ($1, $2, $3) ON CONFLICT (account_id, sender) DO NOTHING",
        params![account_id, sender, now],
    )?;
    Ok(())
}

/// Whether the sender is approved for the account or its parent.
pub fn sender_approved(
    conn: &mut dyn Conn,
    account_id: i64,
    parent_id: Option<i64>,
    sender: &str,
) -> Result<bool, DbError> {
    Ok(conn
        .query_opt(
            "SELECT 1 FROM approved_senders WHERE sender = $1 AND (account_id = $2 OR account_id = $3)",
            params![sender, account_id, parent_id.unwrap_or(account_id)],
        )?
        .is_some())
}

/// The senders approved for an account.
pub fn approved_senders(conn: &mut dyn Conn, account_id: i64) -> Result<Vec<String>, DbError> {
    conn.query(
        "SELECT sender FROM approved_senders WHERE account_id = $1 ORDER BY sender",
        params![account_id],
    )?
    .iter()
    .map(|r| r.text(0))
    .collect()
}

/// One of the account's numbers in `country`, to send from when no sender is given.
pub fn number_in_country(
    conn: &mut dyn Conn,
    account_id: i64,
    country: &str,
) -> Result<Option<String>, DbError> {
    conn.query_opt(
        "SELECT e164 FROM numbers WHERE account_id = $1 AND country = $2 ORDER BY assigned, e164 LIMIT 1",
        params![account_id, country],
    )?
    .map(|r| r.text(0))
    .transpose()
}

/// [`number_in_country`] of each (account, country) of `pairs`, by pair: on PostgreSQL in
/// one statement (one round trip for a group of requests of many accounts), on SQLite one
/// point read each (in process, cheaper than a statement that joins them).
pub fn numbers_in_countries(
    conn: &mut dyn Conn,
    pairs: &[(i64, String)],
) -> Result<std::collections::HashMap<(i64, String), Option<String>>, DbError> {
    use crate::sql::Columns;
    let mut out = std::collections::HashMap::with_capacity(pairs.len());
    if conn.dialect() == Dialect::Sqlite || pairs.len() < 2 {
        for (account, country) in pairs {
            let found = number_in_country(conn, *account, country)?;
            out.insert((*account, country.clone()), found);
        }
        return Ok(out);
    }
    let columns = Columns::new()
        .int("account_id", pairs.iter().map(|(a, _)| Some(*a)))
        .text("country", pairs.iter().map(|(_, c)| Some(c.clone())));
    let sql = format!(
        "SELECT p.account_id, p.country, (SELECT n.e164 FROM numbers n \
         WHERE n.account_id = p.account_id AND n.country = p.country \
         ORDER BY n.assigned, n.e164 LIMIT 1) FROM {}",
        columns.unnest("p", 1)
    );
    for r in conn.query(&sql, &columns.into_params())? {
        out.insert((r.int(0)?, r.text(1)?), r.opt_text(2)?);
    }
    Ok(out)
}

/// A page of the account's SMS newest first, from after `keyset`'s (created, id): the
/// console's list, through the (account, direction, created) index at any depth; filters no
/// index serves read at most [`search::SCAN_WINDOW`] rows a page. As they are at `now`.
pub fn newest(
    conn: &mut dyn Conn,
    account_id: i64,
    f: &SmsFilter,
    keyset: &search::Keyset,
    now: Timestamp,
) -> Result<search::Scanned<Sms>, DbError> {
    let dialect = conn.dialect();
    let narrow = |q: &mut SqlBuilder| f.narrow(q, dialect, now);
    // On PostgreSQL a filtered page reads its window from `sms_message` alone and joins
    // each SMS's state to the window's rows only: through the view, the window (up to
    // `SCAN_WINDOW` rows) and the read of where it ended each joined every row they passed.
    let scanned = if dialect == Dialect::Postgres && f.narrows() {
        static WINDOW_COLUMNS: std::sync::LazyLock<String> =
            std::sync::LazyLock::new(|| qualified_columns("w"));
        search::newest_first_within_joined(
            conn,
            &WINDOW_COLUMNS,
            " JOIN sms_state s ON s.sms_id = w.id",
            &indexed("sms_message", account_id, f),
            &narrow,
            Some("created"),
            "id",
            keyset,
            search::SCAN_WINDOW,
        )?
    } else {
        search::newest_first_within(
            conn,
            COLUMNS,
            &indexed("sms", account_id, f),
            f.narrows().then_some(&narrow as &dyn Fn(&mut SqlBuilder)),
            Some("created"),
            "id",
            keyset,
            search::SCAN_WINDOW,
        )?
    };
    scanned.try_map(|r| from_row(r).map(|sms| sms.as_of(now)))
}
