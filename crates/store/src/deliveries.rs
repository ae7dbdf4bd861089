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

/// A due delivery before it is claimed: what a claim picks by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    /// Internal key.
    pub id: i64,
    /// The account it belongs to.
    pub account_id: i64,
    /// Where it goes.
    pub endpoint: String,
}

/// What a claim took, and the last account its walk visited: the next claim starts after
/// it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claimed {
    /// The deliveries claimed, leased, with what their requests need.
    pub due: Vec<Due>,
    /// The last account visited (the next claim's `walk_after`).
    pub walk_ended: i64,
}

/// Claims deliveries due at `now`, leasing them for `lease_ms` so no other worker takes
/// them meanwhile: those `pick` takes, at most `limit`, of the due deliveries of the
/// accounts visited in turn after `walk_after` (see [`candidates`]), leaving out `exclude`.
/// A delivery with an order key waits while an earlier one of the same key is pending
/// (claimed or waiting for a retry): the events of one SMS reach a subscriber in order.
///
/// The candidates are read narrow and without a lock, then the picked ones with what their
/// requests need, locked (on PostgreSQL skipping any another worker holds, and checked due
/// again), then their leases. The candidates a claim does not pick (their endpoint is at its
/// cap) are neither read whole nor locked.
pub fn claim(
    conn: &mut dyn Conn,
    now: Timestamp,
    lease_ms: i64,
    limit: i64,
    exclude: &Exclusions,
    walk_after: i64,
    pick: &mut dyn FnMut(&Candidate) -> bool,
) -> Result<Claimed, DbError> {
    let (picked, walk_ended) = candidates(conn, now, limit.max(1), exclude, walk_after, pick)?;
    if picked.is_empty() {
        return Ok(Claimed {
            due: Vec::new(),
            walk_ended,
        });
    }
    let dialect = conn.dialect();
    let lock = match dialect {
        Dialect::Postgres => " FOR UPDATE OF d SKIP LOCKED",
        Dialect::Sqlite => "",
    };
    let (among, list) = crate::sql::in_list(dialect, "d.id", 2, crate::sql::ids(&picked));
    let mut params = vec![now.into()];
    params.extend(list);
    let rows = conn.query(
        &format!(
            "SELECT d.id, d.endpoint, d.next_try, w.sid, w.status, w.hmac_secret, COALESCE(w.hmac_algo, 'SHA256'), \
             e.event_id, e.type, e.data, e.created, d.account_id \
             FROM deliveries d JOIN events e ON e.id = d.event_id LEFT JOIN webhooks w ON w.id = d.webhook_id \
             WHERE {among} AND d.next_at IS NOT NULL AND d.next_at <= $1 ORDER BY d.next_at, d.id{lock}"
        ),
        &params,
    )?;
    let due = rows
        .iter()
        .map(due_from_row)
        .collect::<Result<Vec<_>, _>>()?;
    if due.is_empty() {
        return Ok(Claimed { due, walk_ended });
    }
    // The claim uses up its try: a node that dies after sending leaves the next claim to
    // send the following try number, so no (event, try) pair is ever sent twice. Only the
    // deliveries read (locked) above: another worker holds the others.
    let claimed: Vec<i64> = due.iter().map(|d| d.id).collect();
    let (among, list) = crate::sql::in_list(dialect, "id", 2, crate::sql::ids(&claimed));
    let mut params = vec![now.plus_ms(lease_ms).into()];
    params.extend(list);
    conn.execute(
        &format!("UPDATE deliveries SET next_at = $1, next_try = next_try + 1 WHERE {among}"),
        &params,
    )?;
    Ok(Claimed { due, walk_ended })
}

/// Most accounts with due deliveries a claim reads.
pub const WALK_ACCOUNTS: i64 = 16;
/// Accounts with pending deliveries one statement of the walk looks at.
pub const WALK_PROBES: i64 = 64;
/// Statements of the walk a claim makes at most (so at most 256 accounts looked at).
const WALK_STATEMENTS: usize = 4;
/// Most of an account's due deliveries a claim reads (oldest first), whatever it picks.
pub const EXAMINED_PER_ACCOUNT: i64 = 256;

/// The ids `pick` takes, at most `limit`, and where the walk stopped (`i64::MIN`: it went
/// round, the next one starts from the first account).
///
/// The accounts with pending deliveries are looked at in turn, from the first after
/// `walk_after`, going round to the first account at the end, one index lookup each with
/// the due time of its oldest delivery (a loose walk of `deliveries_due`, whatever their
/// number of deliveries), [`WALK_PROBES`] a statement. Those with a delivery due, and not
/// named by `exclude`, are read, at most [`WALK_ACCOUNTS`]: of each its first
/// [`EXAMINED_PER_ACCOUNT`] due deliveries, oldest first, less those of the endpoints
/// `exclude` names. Accounts whose deliveries all wait for a retry cost a lookup, not a
/// turn.
///
/// So a claim reads a bounded number of rows whatever the backlog: an account whose
/// endpoint is at its cap with a million deliveries waiting costs a claim 256 rows, never
/// the million, and never hides another account's deliveries behind its own (before, a
/// claim read every due delivery of the endpoints it left out to reach the others). Within
/// an account, deliveries to its other endpoints behind more than 256 of a capped endpoint's
/// wait for that endpoint's line to shorten.
fn candidates(
    conn: &mut dyn Conn,
    now: Timestamp,
    limit: i64,
    exclude: &Exclusions,
    walk_after: i64,
    pick: &mut dyn FnMut(&Candidate) -> bool,
) -> Result<(Vec<i64>, i64), DbError> {
    let mut picked = Vec::new();
    let mut read = 0;
    let mut cursor = walk_after;
    // Once round to the first account: where the walk began, so that it stops there.
    let mut began_at: Option<i64> = None;
    for _ in 0..WALK_STATEMENTS {
        let probed = accounts_after(conn, cursor, WALK_PROBES)?;
        let ended = (probed.len() as i64) < WALK_PROBES;
        for (account, oldest) in probed {
            if began_at.is_some_and(|began| account > began) {
                return Ok((picked, i64::MIN));
            }
            cursor = account;
            if oldest > now || exclude.accounts.contains(&account) {
                continue;
            }
            for candidate in due_of(conn, now, account, exclude)? {
                if (picked.len() as i64) < limit && pick(&candidate) {
                    picked.push(candidate.id);
                }
            }
            read += 1;
            if (picked.len() as i64) >= limit || read >= WALK_ACCOUNTS {
                return Ok((picked, account));
            }
        }
        if ended {
            if began_at.is_some() || walk_after == i64::MIN {
                return Ok((picked, i64::MIN));
            }
            began_at = Some(walk_after);
            cursor = i64::MIN;
        }
    }
    // As many accounts looked at as a claim may: the next one goes on from here.
    Ok((picked, cursor))
}

/// Up to `most` accounts with pending deliveries after `after`, in order, each with the due
/// time of its oldest: one index lookup for each.
fn accounts_after(
    conn: &mut dyn Conn,
    after: i64,
    most: i64,
) -> Result<Vec<(i64, Timestamp)>, DbError> {
    conn.query(
        "WITH RECURSIVE a(id, n) AS ( \
         SELECT (SELECT min(account_id) FROM deliveries WHERE next_at IS NOT NULL AND account_id > $1), 1 \
         UNION ALL \
         SELECT (SELECT min(account_id) FROM deliveries WHERE next_at IS NOT NULL AND account_id > a.id), a.n + 1 \
         FROM a WHERE a.id IS NOT NULL AND a.n < CAST($2 AS BIGINT)) \
         SELECT a.id, (SELECT min(d.next_at) FROM deliveries d \
                       WHERE d.next_at IS NOT NULL AND d.account_id = a.id) \
         FROM a WHERE a.id IS NOT NULL ORDER BY a.id",
        params![after, most],
    )?
    .iter()
    .map(|r| Ok((r.int(0)?, r.timestamp(1)?)))
    .collect()
}

/// The account's first [`EXAMINED_PER_ACCOUNT`] due deliveries, oldest first, that do not
/// wait for an earlier one of their order key, less those of the endpoints `exclude` names.
///
/// The waiting ones are passed over before the limit, not counted in it: a delivery whose
/// lease ran out (its node died) is due again after its successors, which wait for it; had
/// they filled the limit, none of them would ever be read again (the crash harness found
/// it). So the bound is on the deliveries that may go now; an account's read also steps
/// over its waiting ones, one index lookup each.
///
/// The account and the due time are bounds of one range of `deliveries_due`, written as row
/// comparisons rather than `account_id = $2 AND next_at <= $1`: with the latter, PostgreSQL
/// without fresh statistics (a backlog loaded since its last `ANALYZE`) estimated a few
/// hundred rows, read every due delivery of the account in a bitmap scan and sorted them
/// (25 ms a claim at 50,000, measured); the range is planned as the index scan it is, which
/// stops at the limit.
fn due_of(
    conn: &mut dyn Conn,
    now: Timestamp,
    account: i64,
    exclude: &Exclusions,
) -> Result<Vec<Candidate>, DbError> {
    let mut params = vec![
        crate::sql::Value::from(now),
        account.into(),
        i64::MIN.into(),
    ];
    let endpoints = exclude
        .endpoints
        .iter()
        .map(|e| e.as_str().into())
        .collect();
    let filters = crate::sql::not_in("s.endpoint", endpoints, &mut params);
    conn.query(
        &format!(
            "SELECT s.id, s.account_id, s.endpoint FROM ( \
             SELECT d.id, d.account_id, d.endpoint, d.next_at FROM deliveries d \
             WHERE d.next_at IS NOT NULL AND (d.account_id, d.next_at) >= ($2, $3) \
             AND (d.account_id, d.next_at) <= ($2, $1) \
             AND (d.order_key IS NULL OR NOT EXISTS (SELECT 1 FROM deliveries p \
                  WHERE p.order_key = d.order_key AND p.status = 'pending' AND p.id < d.id)) \
             ORDER BY d.account_id, d.next_at, d.id LIMIT {EXAMINED_PER_ACCOUNT}) s \
             WHERE TRUE{filters} \
             ORDER BY s.next_at, s.id"
        ),
        &params,
    )?
    .iter()
    .map(|r| {
        Ok(Candidate {
            id: r.int(0)?,
            account_id: r.int(1)?,
            endpoint: r.text(2)?,
        })
    })
    .collect()
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
    let (status, next_at) = next_state(next);
    conn.execute(
        "UPDATE deliveries SET status = $1, next_at = $2, updated = $3 WHERE id = $4 AND next_try = $5",
        params![status, next_at, now, attempt.delivery_id, attempt.try_number + 1],
    )?;
    Ok(())
}

/// Records tries that ended, as [`record`] does each: on PostgreSQL two statements for any
/// number (the attempts, then the deliveries' new states, the columns bound as arrays).
pub fn record_many(
    conn: &mut dyn Conn,
    tries: &[(Attempt, Next)],
    now: Timestamp,
) -> Result<(), DbError> {
    if conn.dialect() == Dialect::Sqlite {
        for (attempt, next) in tries {
            record(conn, attempt, *next, now)?;
        }
        return Ok(());
    }
    use crate::sql::Columns;
    let made: Vec<&Attempt> = tries
        .iter()
        .filter(|(_, next)| *next != Next::Skipped)
        .map(|(a, _)| a)
        .collect();
    if !made.is_empty() {
        let columns = Columns::new()
            .int("delivery_id", made.iter().map(|a| Some(a.delivery_id)))
            .int("try", made.iter().map(|a| Some(a.try_number)))
            .int("status_code", made.iter().map(|a| a.status_code))
            .int("duration_ms", made.iter().map(|a| Some(a.duration_ms)))
            .text("error", made.iter().map(|a| a.error.clone()));
        let sql = format!(
            "INSERT INTO delivery_attempts (delivery_id, try, status_code, duration_ms, error, at) \
             SELECT delivery_id, try, status_code, duration_ms, error, $1 FROM {} ORDER BY ord",
            columns.unnest_ordered("a", 2)
        );
        let mut params = vec![now.into()];
        params.extend(columns.into_params());
        conn.execute(&sql, &params)?;
    }
    let states = Columns::new()
        .int("id", tries.iter().map(|(a, _)| Some(a.delivery_id)))
        .int(
            "next_try",
            tries.iter().map(|(a, _)| Some(a.try_number + 1)),
        )
        .text(
            "status",
            tries.iter().map(|(_, n)| Some(next_state(*n).0.to_owned())),
        )
        .int(
            "next_at",
            tries
                .iter()
                .map(|(_, n)| next_state(*n).1.map(Timestamp::millis)),
        );
    let sql = format!(
        "UPDATE deliveries d SET status = v.status, next_at = v.next_at, updated = $1 FROM {} \
         WHERE d.id = v.id AND d.next_try = v.next_try",
        states.unnest("v", 2)
    );
    let mut params = vec![now.into()];
    params.extend(states.into_params());
    conn.execute(&sql, &params)?;
    Ok(())
}

/// The status and next due time of a delivery after a try.
fn next_state(next: Next) -> (&'static str, Option<Timestamp>) {
    match next {
        Next::Delivered => ("delivered", None),
        Next::RetryAt(at) => ("pending", Some(at)),
        Next::Dead => ("dead", None),
        Next::Skipped => ("skipped", None),
    }
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
