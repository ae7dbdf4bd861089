//! Prepaid credit as a ledger: every debit and credit is a row with the balance after it, and
//! the account's balance (its `credit` column, plus its credit slices on PostgreSQL: see the
//! `slices` module) always equals the sum of its ledger (both change in the same
//! transaction). Crossing the warning level emits `billing.credit_warning` once per crossing;
//! reaching the shutdown level suspends a prepaid account and emits `billing.credit_shutdown`;
//! a top-up above it reactivates the account.

use dialtone_domain::{Money, Timestamp};

use crate::debits::{Entry, Seen};
use crate::params;
use crate::sql::{Conn, DbError, Dialect};

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

/// The account's billing state after a change.
struct After {
    balance: Money,
    warning_level: Money,
    shutdown_level: Money,
    below_warning: bool,
    status: String,
    suspended_by: Option<String>,
    prepaid: bool,
    currency: String,
}

/// The columns [`after`] reads (a macro, so the statements using them are constants): on
/// SQLite, which has no credit slices, the balance is the credit.
macro_rules! after_columns {
    () => {
        concat!("accounts.credit, ", crate::slices::levels!("accounts"))
    };
}

/// [`after_columns`] on PostgreSQL: the balance counts the account's credit slices.
macro_rules! after_columns_sliced {
    () => {
        concat!(
            crate::slices::balance_of!("accounts"),
            ", ",
            crate::slices::levels!("accounts")
        )
    };
}

fn after(row: &crate::Row) -> Result<After, DbError> {
    Ok(After {
        balance: row.money(0)?,
        warning_level: row.money(1)?,
        shutdown_level: row.money(2)?,
        below_warning: row.bool(3)?,
        status: row.text(4)?,
        suspended_by: row.opt_text(5)?,
        prepaid: row.text(6)? == "prepaid",
        currency: row.text(7)?,
    })
}

/// Runs `update` (which changes at most the account's row) and gives the account's billing
/// state after it, or `None` when it changed nothing. PostgreSQL does it in one statement
/// with `RETURNING`; SQLite reads the row back, since `RETURNING` would make it keep a
/// statement journal for every debit.
fn update_returning_after(
    conn: &mut dyn Conn,
    update: &str,
    params: &[crate::Value],
    account_id: i64,
) -> Result<Option<crate::Row>, DbError> {
    match conn.dialect() {
        Dialect::Postgres => conn.query_opt(
            &format!(concat!("{} RETURNING ", after_columns_sliced!()), update),
            params,
        ),
        Dialect::Sqlite => {
            if conn.execute(update, params)? == 0 {
                return Ok(None);
            }
            conn.query_opt(
                concat!("SELECT ", after_columns!(), " FROM accounts WHERE id = $1"),
                params![account_id],
            )
        }
    }
}

fn credit_event(
    conn: &mut dyn Conn,
    account_id: i64,
    kind: &str,
    a: &After,
    threshold: Option<Money>,
    extra: &str,
    now: Timestamp,
) -> Result<(), DbError> {
    let threshold = threshold.map_or_else(|| "null".to_owned(), |t| format!("\"{t}\""));
    let data = format!(
        r#"{{"amount":"{}","currency":"{}","threshold":{threshold}{extra}}}"#,
        a.balance, a.currency
    );
    crate::events::emit(conn, account_id, kind, &data, now)?;
    Ok(())
}

/// The account's balance now. Authentication's copy of an account keeps the balance it was
/// read with (see `key_cache`), so whatever shows a balance reads it here.
pub fn balance(conn: &mut dyn Conn, account_id: i64) -> Result<Money, DbError> {
    conn.query_one(
        concat!(
            "SELECT ",
            crate::slices::balance_of!("a"),
            " FROM accounts a WHERE a.id = $1"
        ),
        params![account_id],
    )?
    .money(0)
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
    spend(conn, account_id, amount, kind, cause, now, false)
}

/// Debits usage that already happened (a call's minutes at hangup): recorded even when it
/// takes a prepaid balance below zero, with the same thresholds and events as [`debit`].
pub fn debit_usage(
    conn: &mut dyn Conn,
    account_id: i64,
    amount: Money,
    kind: &str,
    cause: &str,
    now: Timestamp,
) -> Result<Spend, DbError> {
    spend(conn, account_id, amount, kind, cause, now, true)
}

fn spend(
    conn: &mut dyn Conn,
    account_id: i64,
    amount: Money,
    kind: &str,
    cause: &str,
    now: Timestamp,
    used: bool,
) -> Result<Spend, DbError> {
    if !used && let Some(spent) = spend_deferred(conn, account_id, amount, kind, cause, now)? {
        return Ok(spent);
    }
    let Some(row) = take(conn, account_id, amount, used)? else {
        return Ok(Spend::Insufficient {
            balance: balance(conn, account_id)?,
        });
    };
    let a = after(&row)?;
    record(
        conn,
        account_id,
        amount.negate(),
        a.balance,
        kind,
        cause,
        now,
    )?;
    crossed(conn, account_id, &a, now)?;
    Ok(Spend::Done { balance: a.balance })
}

/// Debits `amount` from the account's balance: from the connection's credit slice on
/// PostgreSQL (see the `slices` module), from the account's row on SQLite. Gives the billing
/// state after it, or `None` (nothing changed) when a prepaid balance does not cover it and
/// the debit is not `used` (usage that already happened, taken even below zero).
fn take(
    conn: &mut dyn Conn,
    account_id: i64,
    amount: Money,
    used: bool,
) -> Result<Option<crate::Row>, DbError> {
    match conn.credit_holder() {
        Some(holder) => crate::slices::debit(conn, holder, account_id, amount, used),
        None => update_returning_after(
            conn,
            "UPDATE accounts SET credit = credit - $1 WHERE id = $2 AND ($3 OR billing_mode = 'postpaid' OR credit >= $1)",
            params![amount, account_id, used],
            account_id,
        ),
    }
}

/// After a debit: the warning once per crossing of its level, the shutdown of a prepaid
/// account at its level.
fn crossed(conn: &mut dyn Conn, account_id: i64, a: &After, now: Timestamp) -> Result<(), DbError> {
    if !a.below_warning && a.balance < a.warning_level {
        conn.execute(
            "UPDATE accounts SET below_warning = $1 WHERE id = $2",
            params![true, account_id],
        )?;
        credit_event(
            conn,
            account_id,
            "billing.credit_warning",
            a,
            Some(a.warning_level),
            "",
            now,
        )?;
    }
    if a.prepaid && a.balance <= a.shutdown_level && a.status == "active" {
        conn.execute(
            "UPDATE accounts SET status = 'suspended', suspended_by = 'credit', updated = $1 WHERE id = $2",
            params![now, account_id],
        )?;
        credit_event(
            conn,
            account_id,
            "billing.credit_shutdown",
            a,
            Some(a.shutdown_level),
            "",
            now,
        )?;
    }
    Ok(())
}

/// Reads, in one statement, the balances of the `accounts` a batch of writes is about to
/// debit, when the connection defers its debits (see the `debits` module) and the batch has
/// not read them yet: the first debit of each then needs no statement of its own. Does
/// nothing otherwise.
pub fn read_balances(conn: &mut dyn Conn, accounts: &[i64]) -> Result<(), DbError> {
    let Some(d) = conn.deferred_debits() else {
        return Ok(());
    };
    let mut unread: Vec<i64> = accounts
        .iter()
        .copied()
        .filter(|a| d.seen(*a).is_none())
        .collect();
    unread.sort_unstable();
    unread.dedup();
    if unread.len() < 2 {
        // One account: its first debit reads it as cheaply.
        return Ok(());
    }
    see_balances(conn, &unread)
}

/// Reads the balances of `accounts` in one statement and keeps them in the batch's
/// deferred debits (an account not found is left out).
fn see_balances(conn: &mut dyn Conn, accounts: &[i64]) -> Result<(), DbError> {
    let (among, params) = crate::sql::in_list(conn.dialect(), "a.id", 1, crate::sql::ids(accounts));
    let rows = conn.query(
        &format!(
            concat!(
                "SELECT a.id, ",
                crate::slices::balance_of!("a"),
                ", a.billing_mode FROM accounts a WHERE {}"
            ),
            among
        ),
        &params,
    )?;
    let Some(d) = conn.deferred_debits() else {
        return Ok(());
    };
    for r in rows {
        let seen = Seen {
            credit: r.money(1)?,
            prepaid: r.text(2)? == "prepaid",
        };
        d.see(r.int(0)?, seen);
    }
    Ok(())
}

/// A debit kept for the end of the batch, when the connection defers them (see the
/// `debits` module): checked against the credit the batch read less what it already took.
/// None when debits are not deferred.
fn spend_deferred(
    conn: &mut dyn Conn,
    account_id: i64,
    amount: Money,
    kind: &str,
    cause: &str,
    now: Timestamp,
) -> Result<Option<Spend>, DbError> {
    let seen = match conn.deferred_debits() {
        None => return Ok(None),
        Some(d) => d.seen(account_id),
    };
    let seen = match seen {
        Some(seen) => seen,
        None => {
            see_balances(conn, &[account_id])?;
            conn.deferred_debits()
                .and_then(|d| d.seen(account_id))
                .ok_or_else(|| DbError::Other(format!("no account {account_id} to debit")))?
        }
    };
    let Some(d) = conn.deferred_debits() else {
        return Ok(None);
    };
    let overflow = || DbError::Other(format!("the debits of account {account_id} overflow"));
    let left = seen
        .credit
        .checked_sub(d.pending(account_id).ok_or_else(overflow)?)
        .ok_or_else(overflow)?;
    if seen.prepaid && left < amount {
        return Ok(Some(Spend::Insufficient { balance: left }));
    }
    d.push(Entry {
        account_id,
        amount,
        kind: kind.to_owned(),
        cause: cause.to_owned(),
        now,
    });
    Ok(Some(Spend::Done {
        balance: left.checked_sub(amount).ok_or_else(overflow)?,
    }))
}

/// Takes the batch's deferred debits: per account (in id order, so two batches lock their
/// rows in the same order), one conditional `UPDATE` of the total, then the ledger lines
/// with the balance after each, in the order the writes made them, and the warning and
/// shutdown as immediate debits would have made them. Returns false, having changed nothing
/// the caller must keep, when an account's credit no longer covers its total (another
/// transaction spent it since the batch read it): the caller rolls the batch back and runs
/// its writes again one by one.
pub fn settle_deferred(conn: &mut dyn Conn) -> Result<bool, DbError> {
    let entries = match conn.deferred_debits() {
        Some(d) => d.take(),
        None => return Ok(true),
    };
    let overflow = || DbError::Other("the batch's debits overflow".into());
    let mut totals: std::collections::BTreeMap<i64, Money> = std::collections::BTreeMap::new();
    for e in &entries {
        let total = totals.entry(e.account_id).or_insert(Money::ZERO);
        *total = total.checked_add(e.amount).ok_or_else(overflow)?;
    }
    // The accounts whose slice (this session's) covers their total, in one statement; the
    // others from their rows, one by one.
    let holder = conn.credit_holder().filter(|_| totals.len() > 1);
    let mut covered = match holder {
        Some(holder) => {
            let list: Vec<(i64, Money)> = totals.iter().map(|(a, t)| (*a, *t)).collect();
            crate::slices::debit_own_many(conn, holder, &list)?
        }
        None => std::collections::HashMap::new(),
    };
    // Every account's lines, written together once every debit is taken.
    let mut lines = Vec::new();
    for (account_id, total) in totals {
        let taken = match (covered.remove(&account_id), holder) {
            (Some(row), _) => Some(row),
            (None, Some(holder)) => {
                crate::slices::debit_from_row(conn, holder, account_id, total, false)?
            }
            (None, None) => take(conn, account_id, total, false)?,
        };
        let Some(row) = taken else {
            return Ok(false);
        };
        let a = after(&row)?;
        let mut balance = a.balance.checked_add(total).ok_or_else(overflow)?;
        let mut last = None;
        for e in entries.iter().filter(|e| e.account_id == account_id) {
            balance = balance.checked_sub(e.amount).ok_or_else(overflow)?;
            lines.push((e, balance));
            last = Some(e.now);
        }
        if let Some(now) = last {
            crossed(conn, account_id, &a, now)?;
        }
    }
    record_lines(conn, &lines)?;
    Ok(true)
}

/// Ledger lines of deferred debits, of any accounts, in their order: on PostgreSQL one
/// statement for any number (the columns bound as arrays), on SQLite several to a statement.
fn record_lines(conn: &mut dyn Conn, lines: &[(&Entry, Money)]) -> Result<(), DbError> {
    use crate::sql::{Columns, Item, row_chunks, values_list};
    if lines.is_empty() {
        return Ok(());
    }
    if conn.dialect() == Dialect::Postgres {
        let columns = Columns::new()
            .int("account_id", lines.iter().map(|(e, _)| Some(e.account_id)))
            .int(
                "amount",
                lines.iter().map(|(e, _)| Some(e.amount.negate().units())),
            )
            .int("balance_after", lines.iter().map(|(_, b)| Some(b.units())))
            .text("kind", lines.iter().map(|(e, _)| Some(e.kind.clone())))
            .text("cause", lines.iter().map(|(e, _)| Some(e.cause.clone())))
            .int("created", lines.iter().map(|(e, _)| Some(e.now.millis())));
        let sql = format!(
            "INSERT INTO ledger (account_id, amount, balance_after, kind, cause, created) \
             SELECT account_id, amount, balance_after, kind, cause, created FROM {} ORDER BY ord",
            columns.unnest_ordered("l", 1)
        );
        conn.execute(&sql, &columns.into_params())?;
        return Ok(());
    }
    for chunk in row_chunks(lines) {
        let sql = format!(
            "INSERT INTO ledger (account_id, amount, balance_after, kind, cause, created) VALUES {}",
            values_list(chunk.len(), &[Item::Param; 6])
        );
        let mut params = Vec::with_capacity(chunk.len() * 6);
        for (e, balance) in chunk {
            params.extend([
                e.account_id.into(),
                e.amount.negate().into(),
                (*balance).into(),
                e.kind.as_str().into(),
                e.cause.as_str().into(),
                e.now.into(),
            ]);
        }
        conn.execute(&sql, &params)?;
    }
    Ok(())
}

/// Credits `amount` (positive: a refund or a top-up); returns the balance after it. Clears
/// the warning once the balance is back above its level, and reactivates an account the
/// credit shutdown suspended once the balance is above the shutdown level.
pub fn credit(
    conn: &mut dyn Conn,
    account_id: i64,
    amount: Money,
    kind: &str,
    cause: &str,
    now: Timestamp,
) -> Result<Money, DbError> {
    credit_inner(conn, account_id, amount, kind, cause, now).map(|a| a.balance)
}

fn credit_inner(
    conn: &mut dyn Conn,
    account_id: i64,
    amount: Money,
    kind: &str,
    cause: &str,
    now: Timestamp,
) -> Result<After, DbError> {
    let row = update_returning_after(
        conn,
        "UPDATE accounts SET credit = credit + $1 WHERE id = $2",
        params![amount, account_id],
        account_id,
    )?
    .ok_or_else(|| DbError::Other(format!("no account {account_id} to credit")))?;
    let a = after(&row)?;
    record(conn, account_id, amount, a.balance, kind, cause, now)?;
    if a.below_warning && a.balance >= a.warning_level {
        conn.execute(
            "UPDATE accounts SET below_warning = $1 WHERE id = $2",
            params![false, account_id],
        )?;
    }
    if a.status == "suspended"
        && a.suspended_by.as_deref() == Some("credit")
        && a.balance > a.shutdown_level
    {
        conn.execute(
            "UPDATE accounts SET status = 'active', suspended_by = NULL, updated = $1 WHERE id = $2",
            params![now, account_id],
        )?;
    }
    Ok(a)
}

/// A top-up: credits the account and emits `billing.credit`. Returns the balance after it,
/// or None (nothing changed) when the balance would not fit: an amount that overflows is
/// refused, never half applied.
pub fn top_up(
    conn: &mut dyn Conn,
    account_id: i64,
    amount: Money,
    cause: &str,
    now: Timestamp,
) -> Result<Option<Money>, DbError> {
    if balance(conn, account_id)?.checked_add(amount).is_none() {
        return Ok(None);
    }
    let a = credit_inner(conn, account_id, amount, "top-up", cause, now)?;
    credit_event(
        conn,
        account_id,
        "billing.credit",
        &a,
        None,
        &format!(r#","credited":"{amount}""#),
        now,
    )?;
    Ok(Some(a.balance))
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

/// The lowest balance the ledger ever recorded for the account.
pub fn lowest_balance(conn: &mut dyn Conn, account_id: i64) -> Result<Option<Money>, DbError> {
    let row = conn.query_one(
        "SELECT MIN(balance_after) FROM ledger WHERE account_id = $1",
        params![account_id],
    )?;
    Ok(row.opt_int(0)?.map(Money::from_units))
}

/// A number whose monthly fee is due.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DueFee {
    /// Number key.
    pub number_id: i64,
    /// The number.
    pub e164: String,
    /// Owner.
    pub account_id: i64,
    /// Fee.
    pub monthly_price: Money,
    /// Paid up to here.
    pub paid_until: Timestamp,
}

/// Numbers whose contract day has come (locked against other nodes).
pub fn due_fees(conn: &mut dyn Conn, now: Timestamp, limit: i64) -> Result<Vec<DueFee>, DbError> {
    let lock = if conn.dialect() == crate::Dialect::Postgres {
        " FOR UPDATE SKIP LOCKED"
    } else {
        ""
    };
    conn.query(
        &format!(
            "SELECT id, e164, account_id, monthly_price, paid_until FROM numbers \
             WHERE account_id IS NOT NULL AND paid_until IS NOT NULL AND paid_until <= $1 ORDER BY paid_until LIMIT {limit}{lock}"
        ),
        params![now],
    )?
    .iter()
    .map(|r| {
        Ok(DueFee {
            number_id: r.int(0)?,
            e164: r.text(1)?,
            account_id: r.int(2)?,
            monthly_price: r.money(3)?,
            paid_until: r.timestamp(4)?,
        })
    })
    .collect()
}

/// Marks a number paid up to `until`.
pub fn extend(conn: &mut dyn Conn, number_id: i64, until: Timestamp) -> Result<(), DbError> {
    conn.execute(
        "UPDATE numbers SET paid_until = $1 WHERE id = $2",
        params![until, number_id],
    )?;
    Ok(())
}

/// One movement of an account's balance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LedgerEntry {
    /// Internal key (the console's cursor).
    pub id: i64,
    /// Signed amount.
    pub amount: Money,
    /// The balance after it.
    pub balance_after: Money,
    /// What kind of movement (`sms`, `call`, `number`, `top_up`, ...).
    pub kind: String,
    /// What caused it (an SMS sid, a call id, a number).
    pub cause: Option<String>,
    /// When.
    pub created: Timestamp,
}

/// A page of the account's ledger newest first, from after `keyset`'s id.
pub fn ledger_newest(
    conn: &mut dyn Conn,
    account_id: i64,
    keyset: &crate::search::Keyset,
) -> Result<Vec<LedgerEntry>, DbError> {
    let mut q = crate::sql::SqlBuilder::new("FROM ledger WHERE account_id = ");
    q.bind(account_id);
    crate::search::newest_first(
        conn,
        "id, amount, balance_after, kind, cause, created",
        &q,
        None,
        "id",
        keyset,
    )?
    .iter()
    .map(|r| {
        Ok(LedgerEntry {
            id: r.int(0)?,
            amount: r.money(1)?,
            balance_after: r.money(2)?,
            kind: r.text(3)?,
            cause: r.opt_text(4)?,
            created: r.timestamp(5)?,
        })
    })
    .collect()
}
