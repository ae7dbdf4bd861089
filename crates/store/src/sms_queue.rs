//! The SMS worker's queue: each SMS with a next step, by when it is due (`sms_queue`), a view
//! of the SMS's own `next_at` over a partial index by account: on SQLite of `sms.next_at`
//! (migration 0033), on PostgreSQL of `sms_state.next_at` (migration 0036). A move writes
//! the SMS's state and, with it, its place here; nothing in this module writes.
//!
//! How it came to be so: every status move of an SMS changes when it is next due. Indexed
//! on PostgreSQL's whole `sms` row (as it first was), no move could be a HOT update: each
//! wrote a new entry in each of the table's five indexes. A queue table apart (migration
//! 0029) made the row's update HOT, but a move then wrote two row versions, the SMS's and its
//! queue row's (28 us a move under load). Now the moving state is a narrow row of its own
//! (`sms_state`: status, due time, times, history) that is also the queue row: one row
//! version a move, with an entry in each of its two indexes (docs/benchmarks.md). On SQLite,
//! which has no HOT updates, a queue apart only added work (about a tenth of the writer's
//! time under an SMS load); there `sms_due_by_account (account_id, next_at) WHERE next_at IS
//! NOT NULL` does the queue index's work (the view's `INDEXED BY` makes a reader the index
//! cannot serve fail at once instead of scanning `sms`).
//!
//! Why by account (migration 0031): the worker takes a batch of due SMS a transaction, and
//! taken strictly by due time one account's backlog (a burst faster than the moves keep up
//! with) held every other account's SMS behind it for as long as the backlog lasted: 6-7 s
//! for another account's SMS during a 128-connection burst on SQLite, 3 s on PostgreSQL
//! (docs/benchmarks.md). A walk ([`due_ids`]) now visits the accounts with queued SMS in turn
//! and shares the batch out among those with due SMS, so an account's backlog delays its own
//! SMS only.

use std::collections::{HashSet, VecDeque};

use dialtone_domain::Timestamp;

use crate::params;
use crate::sql::{Conn, DbError, Dialect, Value};

/// Most rounds of offers one walk asks for ([`due_ids`]): each asks the accounts that may
/// have more for an even share of what the batch still needs. SMS the caller skips can
/// leave a batch short after the last; the next tick goes on.
const OFFER_ROUNDS: usize = 4;

/// Most accounts one walk visits ([`due_ids`]). Each costs an index lookup or two, whether
/// or not its SMS are due; past this many, the next walk goes on from where this one ended,
/// so with more accounts than this an account's due SMS wait a walk or a few.
pub const WALK_ACCOUNTS: i64 = 64;

/// What a walk of the queue found: the SMS to claim, and the account the next walk starts
/// after.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Walk {
    /// Ids of due SMS, a fair share of each account's (see [`due_ids`]).
    pub ids: Vec<i64>,
    /// The last account visited: the next walk starts after it.
    pub last_account: i64,
}

/// Up to `limit` SMS due at `now`, shared among the accounts that have some: each account
/// with queued SMS after `after_account` (wrapping around to the first, at most
/// [`WALK_ACCOUNTS`]) offers its due SMS soonest first, and the batch takes one from each
/// in turn until it is full, so an account with a backlog takes what the others leave and
/// no more. `skip`: SMS the caller has already claimed (left out).
pub fn due_ids(
    conn: &mut dyn Conn,
    now: Timestamp,
    limit: usize,
    after_account: i64,
    skip: &HashSet<i64>,
) -> Result<Walk, DbError> {
    let mut accounts = accounts_after(conn, after_account, WALK_ACCOUNTS)?;
    let visited = i64::try_from(accounts.len()).unwrap_or(WALK_ACCOUNTS);
    if visited < WALK_ACCOUNTS && after_account > 0 {
        // Round the end: the accounts from the first up to where this walk started (those
        // after it are in already).
        let first = accounts_after(conn, 0, WALK_ACCOUNTS - visited)?;
        accounts.extend(first.into_iter().filter(|&a| a <= after_account));
    }
    let last_account = accounts.last().copied().unwrap_or(0);
    // Offered a round at a time, each account an even share of what the batch still needs,
    // and again only by the accounts that offered all they were asked (they may have more):
    // the rows read stay near the batch's size however many accounts have a backlog.
    let mut offers: Vec<VecDeque<i64>> = vec![VecDeque::new(); accounts.len()];
    let mut read = vec![0usize; accounts.len()];
    let mut open: Vec<usize> = (0..accounts.len()).collect();
    let mut ids = Vec::with_capacity(limit);
    for _ in 0..OFFER_ROUNDS {
        if ids.len() >= limit || open.is_empty() {
            break;
        }
        let share = (limit - ids.len()).div_ceil(open.len());
        let asked: Vec<(i64, usize)> = open.iter().map(|&i| (accounts[i], read[i])).collect();
        let rows = due_of(conn, now, share, &asked)?;
        let mut still_open = Vec::new();
        for (&i, got) in open.iter().zip(rows) {
            read[i] += got.len();
            if got.len() == share {
                still_open.push(i);
            }
            offers[i].extend(got.into_iter().filter(|id| !skip.contains(id)));
        }
        open = still_open;
        let mut turns: Vec<_> = offers
            .iter_mut()
            .map(|offer| std::iter::from_fn(|| offer.pop_front()))
            .collect();
        in_turn(&mut turns, limit, &mut ids);
    }
    Ok(Walk { ids, last_account })
}

/// Takes one item of each of `offers` in turn, in their order, into `taken` until it holds
/// `limit` or every offer has run out; gives the index of the offer the last item came from.
/// How the worker shares a batch among accounts: the walk's offers here, the node's hints
/// (`DueHints::take_due` in the server).
pub fn in_turn<I: Iterator<Item = i64>>(
    offers: &mut [I],
    limit: usize,
    taken: &mut Vec<i64>,
) -> Option<usize> {
    let mut last = None;
    while taken.len() < limit {
        let before = taken.len();
        for (i, offer) in offers.iter_mut().enumerate() {
            if taken.len() >= limit {
                break;
            }
            if let Some(id) = offer.next() {
                taken.push(id);
                last = Some(i);
            }
        }
        if taken.len() == before {
            break;
        }
    }
    last
}

/// Up to `most` accounts with queued SMS, after `after`, in order: one index lookup each (a
/// loose walk of `sms_state_due`, on SQLite `sms_due_by_account`), whatever their
/// number of queued SMS.
fn accounts_after(conn: &mut dyn Conn, after: i64, most: i64) -> Result<Vec<i64>, DbError> {
    conn.query(
        "WITH RECURSIVE a(id, n) AS ( \
         SELECT (SELECT min(account_id) FROM sms_queue WHERE account_id > $1), 1 \
         UNION ALL \
         SELECT (SELECT min(account_id) FROM sms_queue WHERE account_id > a.id), a.n + 1 \
         FROM a WHERE a.id IS NOT NULL AND a.n < CAST($2 AS BIGINT)) \
         SELECT id FROM a WHERE id IS NOT NULL",
        params![after, most],
    )?
    .iter()
    .map(|r| r.int(0))
    .collect()
}

/// Each account's SMS due at `now`, soonest first (then in the order they were stored),
/// `limit` of each after the first `skip` of it (the `(account, skip)` pairs): on PostgreSQL
/// one statement for every account, on SQLite one lookup each. Both read the index alone
/// (PostgreSQL's `sms_state_due`, its entries ending with `sms_id` named; SQLite's
/// `sms_due_by_account` on `sms`, its entries ending with the row id, the SMS's id).
fn due_of(
    conn: &mut dyn Conn,
    now: Timestamp,
    limit: usize,
    accounts: &[(i64, usize)],
) -> Result<Vec<Vec<i64>>, DbError> {
    let mut offers: Vec<Vec<i64>> = vec![Vec::new(); accounts.len()];
    if accounts.is_empty() || limit == 0 {
        return Ok(offers);
    }
    match conn.dialect() {
        Dialect::Postgres => {
            let sql = format!(
                "SELECT a.ord, q.sms_id FROM unnest($1::bigint[], $3::bigint[]) WITH ORDINALITY AS a(id, skip, ord) \
                 CROSS JOIN LATERAL (SELECT sms_id, due_at FROM sms_queue \
                 WHERE account_id = a.id AND due_at <= $2 ORDER BY due_at, sms_id LIMIT {limit} OFFSET a.skip) q \
                 ORDER BY a.ord, q.due_at, q.sms_id"
            );
            let ids: Vec<i64> = accounts.iter().map(|&(a, _)| a).collect();
            let skips: Vec<i64> = accounts
                .iter()
                .map(|&(_, n)| i64::try_from(n).unwrap_or(i64::MAX))
                .collect();
            let params = [
                Value::Array(crate::sql::ids(&ids)),
                now.into(),
                Value::Array(crate::sql::ids(&skips)),
            ];
            for row in conn.query(&sql, &params)? {
                let at = usize::try_from(row.int(0)? - 1)
                    .map_err(|_| DbError::Other("an account out of the walk".to_owned()))?;
                if let Some(offer) = offers.get_mut(at) {
                    offer.push(row.int(1)?);
                }
            }
        }
        Dialect::Sqlite => {
            let sql = format!(
                "SELECT sms_id FROM sms_queue WHERE account_id = $1 AND due_at <= $2 \
                 ORDER BY due_at, sms_id LIMIT {limit} OFFSET $3"
            );
            for (offer, &(account, skip)) in offers.iter_mut().zip(accounts) {
                let skip = i64::try_from(skip).unwrap_or(i64::MAX);
                for row in conn.query(&sql, params![account, now, skip])? {
                    offer.push(row.int(0)?);
                }
            }
        }
    }
    Ok(offers)
}
