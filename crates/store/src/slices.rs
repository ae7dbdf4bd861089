//! Credit reserved in slices (PostgreSQL): the debits of one account on several connections
//! and nodes without a queue on the account's row.
//!
//! Every debit of a prepaid balance used to update the account's row, whose lock a batch
//! holds until its commit (its WAL flush): the batches of every connection and node that
//! debit the account ran one after the other (the profile in docs/benchmarks.md). Now each
//! database session is a *holder* (a random id, [`Conn::credit_holder`]) that takes a slice
//! of the account's credit into a row of its own (`credit_slices`) and debits that row, which
//! no other writer locks. The account's row is written once per slice.
//!
//! - **The balance** is `accounts.credit` plus the `remaining` of the account's slices
//!   ([`balance_of!`]); every reader of the balance reads both, and the ledger's sum equals it.
//! - **The floor.** A prepaid account's credit and slices never go below zero: a slice is
//!   debited only while it covers the debit, the row only while its credit does. A slice is
//!   taken only while the account's credit covers [`SLICE_FROM`] times the debit, so near the
//!   floor every debit takes the row, as it did before slices. When neither the holder's
//!   slice nor the row covers a debit, the holder gives every slice of the account back to
//!   the row (waiting for the batches that hold them) and tries once more: a debit is refused
//!   only when the whole balance does not cover it, and no credit stays stranded in a slice.
//! - **Holders that end** (a node stopped, a connection lost) leave their slices counted in
//!   the balance; the next give-back takes them. A postpaid account has no floor: its
//!   holders debit their slice rows below zero, and never give them back.
//! - **Lock order.** A give-back locks the account's row, then the slices; a holder's refill
//!   the row, then its own slice. A batch that debited its slice and then meets a give-back
//!   on the row (a threshold crossing) is a deadlock PostgreSQL breaks by failing one side,
//!   whose writes run again alone (the `pool` module).
//!
//! SQLite has one writer, which never waits for another's lock: it debits the row, and has no
//! holder.

use dialtone_domain::Money;

use crate::params;
use crate::sql::{Conn, DbError, Row};

/// A slice is taken only from a credit that covers this many times the debit that takes it.
pub(crate) const SLICE_FROM: i64 = 1024;
/// A slice covers this many times the debit that takes it...
const SLICE_DEBITS: i64 = 256;
/// ... and at most one part in this many of the account's credit, so that the holders of a
/// busy account leave most of it on the row.
const SLICE_SHARE: i64 = 16;

/// The balance of the account `$a` (an alias of `accounts`): its credit and its slices.
macro_rules! balance_of {
    ($a:literal) => {
        concat!(
            $a,
            ".credit + CAST(COALESCE((SELECT SUM(sl.remaining) FROM credit_slices sl WHERE sl.account_id = ",
            $a,
            ".id), 0) AS BIGINT)"
        )
    };
}
pub(crate) use balance_of;

/// The columns of the account `$a`'s billing state after a debit, after its balance: the
/// order `billing::after` reads, for every statement that returns that state.
macro_rules! levels {
    ($a:literal) => {
        concat!(
            $a,
            ".warning_level, ",
            $a,
            ".shutdown_level, ",
            $a,
            ".below_warning, ",
            $a,
            ".status, ",
            $a,
            ".suspended_by, ",
            $a,
            ".billing_mode, ",
            $a,
            ".currency"
        )
    };
}
pub(crate) use levels;

/// Debits `total` from the account for `holder`; gives the account's billing state after it
/// (balance first, then the columns of `billing::after`), or `None` when a prepaid balance
/// does not cover it and `used` is false (nothing changed then). `used` debits usage that
/// already happened: taken even below zero.
pub(crate) fn debit(
    conn: &mut dyn Conn,
    holder: i64,
    account_id: i64,
    total: Money,
    used: bool,
) -> Result<Option<Row>, DbError> {
    // The holder's own slice: no other writer locks it. One account's statement binds its
    // values, not arrays ([`debit_own_many`] for several).
    let own = conn.query_opt(
        concat!(
            "WITH s AS (UPDATE credit_slices c SET remaining = c.remaining - $1 FROM accounts a \
             WHERE c.account_id = $2 AND c.holder = $3 AND a.id = $2 \
             AND (c.remaining >= $1 OR a.billing_mode = 'postpaid') RETURNING c.remaining) \
             SELECT a.credit + s.remaining + CAST(COALESCE((SELECT SUM(o.remaining) FROM credit_slices o \
             WHERE o.account_id = $2 AND o.holder <> $3), 0) AS BIGINT), ",
            levels!("a"),
            " FROM s, accounts a WHERE a.id = $2"
        ),
        params![total, account_id, holder],
    )?;
    if own.is_some() {
        return Ok(own);
    }
    debit_from_row(conn, holder, account_id, total, used)
}

/// Debits `total` from the account's row, as [`debit`] does when the holder's own slice
/// does not cover it.
pub(crate) fn debit_from_row(
    conn: &mut dyn Conn,
    holder: i64,
    account_id: i64,
    total: Money,
    used: bool,
) -> Result<Option<Row>, DbError> {
    // The account's row, locked from here to the commit, taking a new slice when the credit
    // is far from the floor. `NO KEY`, the lock an `UPDATE` takes: `FOR UPDATE` would also
    // wait for the key-share locks every insert referencing the account holds (the batch's
    // SMS, its ledger lines), and two batches would wait for each other.
    let Some(row) = conn.query_opt(
        "SELECT credit, billing_mode FROM accounts WHERE id = $1 FOR NO KEY UPDATE",
        params![account_id],
    )?
    else {
        return Err(DbError::Other(format!("no account {account_id} to debit")));
    };
    let (credit, prepaid) = (row.money(0)?, row.text(1)? == "prepaid");
    if !prepaid {
        // A postpaid holder debits its own row from now on, below zero.
        take_slice(conn, holder, account_id, Money::ZERO)?;
        return take_from_row(conn, account_id, total, Money::ZERO).map(Some);
    }
    if credit >= total || used {
        let slice = if used {
            Money::ZERO
        } else {
            slice_size(credit, total)
        };
        let after = take_from_row(conn, account_id, total, slice)?;
        if slice > Money::ZERO {
            take_slice(conn, holder, account_id, slice)?;
        }
        return Ok(Some(after));
    }
    // The row does not cover it: every slice back to the row, then once more.
    let Some(row) = conn.query_opt(
        "WITH gone AS (DELETE FROM credit_slices WHERE account_id = $1 RETURNING remaining) \
         UPDATE accounts SET credit = credit + CAST((SELECT COALESCE(SUM(remaining), 0) FROM gone) AS BIGINT) \
         WHERE id = $1 RETURNING credit",
        params![account_id],
    )?
    else {
        return Err(DbError::Other(format!("no account {account_id} to debit")));
    };
    if row.money(0)? < total {
        return Ok(None);
    }
    take_from_row(conn, account_id, total, Money::ZERO).map(Some)
}

/// The holder's own slices' debits of several accounts (`totals`: account, total), in one
/// statement: gives, by account, the billing state after the debit (as [`debit`] gives it)
/// of each account whose slice covered its total. The others are left unchanged, for
/// [`debit_from_row`] one by one.
///
/// Only the holder's own slice rows are locked, which no other holder debits; a give-back
/// at the floor by another holder waits for them, and one that holds an account's row this
/// batch then debits is a deadlock PostgreSQL breaks by failing one side, whose writes run
/// again alone (docs/scaling.md, "Locks").
pub(crate) fn debit_own_many(
    conn: &mut dyn Conn,
    holder: i64,
    totals: &[(i64, Money)],
) -> Result<std::collections::HashMap<i64, Row>, DbError> {
    use crate::sql::Columns;
    let mut covered = std::collections::HashMap::with_capacity(totals.len());
    if totals.is_empty() {
        return Ok(covered);
    }
    let columns = Columns::new()
        .int("account_id", totals.iter().map(|(a, _)| Some(*a)))
        .int("total", totals.iter().map(|(_, t)| Some(t.units())));
    let sql = format!(
        concat!(
            "WITH v AS (SELECT * FROM {}), \
             s AS (UPDATE credit_slices c SET remaining = c.remaining - v.total FROM v, accounts a \
             WHERE c.account_id = v.account_id AND c.holder = $3 AND a.id = v.account_id \
             AND (c.remaining >= v.total OR a.billing_mode = 'postpaid') \
             RETURNING c.account_id, c.remaining) \
             SELECT a.credit + s.remaining + CAST(COALESCE((SELECT SUM(o.remaining) FROM credit_slices o \
             WHERE o.account_id = a.id AND o.holder <> $3), 0) AS BIGINT), ",
            levels!("a"),
            ", a.id FROM s JOIN accounts a ON a.id = s.account_id"
        ),
        columns.unnest("v", 1)
    );
    let mut params = columns.into_params();
    params.push(holder.into());
    for row in conn.query(&sql, &params)? {
        covered.insert(row.int(8)?, row);
    }
    Ok(covered)
}

/// The slice a holder takes with a debit of `total` from a row holding `credit`: none near
/// the floor.
fn slice_size(credit: Money, total: Money) -> Money {
    let (credit, total) = (credit.units(), total.units());
    if total <= 0 || credit / SLICE_FROM < total {
        return Money::ZERO;
    }
    let cap = credit / SLICE_SHARE;
    Money::from_units(total.checked_mul(SLICE_DEBITS).map_or(cap, |s| s.min(cap)))
}

/// Takes `total` and a new slice of `slice` from the account's row (locked by the caller);
/// gives the billing state after the debit, the slice counted in the balance.
fn take_from_row(
    conn: &mut dyn Conn,
    account_id: i64,
    total: Money,
    slice: Money,
) -> Result<Row, DbError> {
    let taken = total
        .checked_add(slice)
        .ok_or_else(|| DbError::Other(format!("the debit of account {account_id} overflows")))?;
    conn.query_opt(
        concat!(
            "UPDATE accounts AS a SET credit = credit - $1 WHERE id = $2 RETURNING ",
            balance_of!("a"),
            " + $3, ",
            levels!("a")
        ),
        params![taken, account_id, slice],
    )?
    .ok_or_else(|| DbError::Other(format!("no account {account_id} to debit")))
}

/// Adds `slice` to the holder's slice of the account (creating it).
fn take_slice(
    conn: &mut dyn Conn,
    holder: i64,
    account_id: i64,
    slice: Money,
) -> Result<(), DbError> {
    conn.execute(
        "INSERT INTO credit_slices (account_id, holder, remaining) VALUES ($1, $2, $3) \
         ON CONFLICT (account_id, holder) DO UPDATE SET remaining = credit_slices.remaining + excluded.remaining",
        params![account_id, holder, slice],
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_slice_near_the_floor() {
        let m = Money::from_units;
        assert_eq!(
            slice_size(m(50_000), m(450)),
            Money::ZERO,
            "111 debits left"
        );
        assert_eq!(slice_size(m(450 * 1024), m(450)), m(450 * 1024 / 16));
        assert_eq!(slice_size(m(1_000_000_000), m(450)), m(450 * 256));
        assert_eq!(
            slice_size(m(i64::MAX), m(i64::MAX / 2048)),
            m(i64::MAX / 16)
        );
        assert_eq!(slice_size(m(1_000_000), Money::ZERO), Money::ZERO);
    }
}
