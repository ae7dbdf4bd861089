//! Prepaid credit as a ledger: every debit and credit is a row with the balance after it, and
//! the account's `credit` column always equals the sum of its ledger (both change in the same
//! statement pair, in the same transaction).

use dialtone_domain::{Money, Timestamp};

use crate::params;
use crate::sql::{Conn, DbError};

/// What a debit did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Spend {
    /// Debited; the balance after it.
    Done {
        /// Balance after the debit.
        balance: Money,
    },
    /// A prepaid account without enough credit: nothing changed.
    Insufficient {
        /// The balance, unchanged.
        balance: Money,
    },
}

/// Debits `amount` (positive) from the account. Prepaid accounts never go below zero;
/// postpaid accounts accumulate a negative balance. `kind` and `cause` say why (ledger).
pub fn debit(
    conn: &mut dyn Conn,
    account_id: i64,
    amount: Money,
    kind: &str,
    cause: &str,
    now: Timestamp,
) -> Result<Spend, DbError> {
    let row = conn.query_opt(
        "UPDATE accounts SET credit = credit - $1 WHERE id = $2 AND (billing_mode = 'postpaid' OR credit >= $1) RETURNING credit",
        params![amount, account_id],
    )?;
    let Some(row) = row else {
        let balance = conn
            .query_one(
                "SELECT credit FROM accounts WHERE id = $1",
                params![account_id],
            )?
            .money(0)?;
        return Ok(Spend::Insufficient { balance });
    };
    let balance = row.money(0)?;
    record(conn, account_id, amount.negate(), balance, kind, cause, now)?;
    Ok(Spend::Done { balance })
}

/// Credits `amount` (positive: a top-up or a refund); returns the balance after it.
pub fn credit(
    conn: &mut dyn Conn,
    account_id: i64,
    amount: Money,
    kind: &str,
    cause: &str,
    now: Timestamp,
) -> Result<Money, DbError> {
    let balance = conn
        .query_one(
            "UPDATE accounts SET credit = credit + $1 WHERE id = $2 RETURNING credit",
            params![amount, account_id],
        )?
        .money(0)?;
    record(conn, account_id, amount, balance, kind, cause, now)?;
    Ok(balance)
}

fn record(
    conn: &mut dyn Conn,
    account_id: i64,
    amount: Money,
    balance: Money,
    kind: &str,
    cause: &str,
    now: Timestamp,
) -> Result<(), DbError> {
    conn.execute(
        "INSERT INTO ledger (account_id, amount, balance_after, kind, cause, created) VALUES ($1, $2, $3, $4, $5, $6)",
        params![account_id, amount, balance, kind, cause, now],
    )?;
    Ok(())
}

/// The sum of the account's ledger (equal to its balance; used to check the invariant).
pub fn ledger_sum(conn: &mut dyn Conn, account_id: i64) -> Result<Money, DbError> {
    let row = conn.query_one(
        "SELECT CAST(COALESCE(SUM(amount), 0) AS BIGINT) FROM ledger WHERE account_id = $1",
        params![account_id],
    )?;
    row.money(0)
}
