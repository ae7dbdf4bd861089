//! Accounts, sub accounts and API keys.

use dialtone_domain::account::{AccountStatus, BillingMode};
use dialtone_domain::{Money, Sid, Timestamp};

use crate::params;
use crate::sql::{Conn, DbError, Row};

/// An account as stored (without its password hash).
#[derive(Debug, Clone, PartialEq)]
pub struct Account {
    /// Internal key, used by every table that belongs to an account.
    pub id: i64,
    /// Public identifier.
    pub sid: Sid,
    /// Display name.
    pub name: String,
    /// The parent's internal key, for a sub account.
    pub parent_id: Option<i64>,
    /// The parent's sid, for a sub account.
    pub parent_sid: Option<Sid>,
    /// Whether it may spend.
    pub status: AccountStatus,
    /// ISO 4217 code.
    pub currency: String,
    /// Prepaid or postpaid.
    pub billing_mode: BillingMode,
    /// Prepaid balance (always the sum of the account's ledger).
    pub credit: Money,
    /// Legacy login for the earlier interfaces.
    pub login: String,
    /// Creation time.
    pub created: Timestamp,
    /// Last change.
    pub updated: Timestamp,
    /// Crossing below this balance emits `billing.credit_warning`.
    pub warning_level: Money,
    /// Reaching this balance suspends a prepaid account.
    pub shutdown_level: Money,
    /// Requests per second the operator allows it (None: the node's default).
    pub rate_limit: Option<i64>,
    /// Requests it may burst above the rate (None: the node's default).
    pub rate_burst: Option<i64>,
}

/// `SELECT` of an account's columns from `accounts a` (its parent `p`) followed by `$rest`:
/// the statements are constants, built at compile time (authentication runs one per
/// request). Authentication keeps accounts in memory until `auth_version` moves, so a
/// column added here (other than the balance) must also be in the `accounts_auth_changed`
/// trigger's list (migration 0016, both backends).
macro_rules! select_account {
    ($rest:literal) => {
        concat!(
            "SELECT a.id, a.sid, a.name, a.parent_id, p.sid, a.status, a.currency, a.billing_mode, ",
            crate::slices::balance_of!("a"),
            ", a.login, a.created, a.updated, a.warning_level, a.shutdown_level, a.rate_limit, a.rate_burst",
            $rest
        )
    };
}
/// How many columns [`select_account`] names (the next column is the first a query adds).
const COLUMN_COUNT: usize = 16;

fn account_from_row(row: &Row) -> Result<Account, DbError> {
    let bad = |column: usize, what: &str| DbError::Decode {
        column,
        message: what.to_owned(),
    };
    Ok(Account {
        id: row.int(0)?,
        sid: Sid::from_stored(row.text(1)?),
        name: row.text(2)?,
        parent_id: row.opt_int(3)?,
        parent_sid: row.opt_text(4)?.map(Sid::from_stored),
        status: AccountStatus::parse(&row.text(5)?).ok_or_else(|| bad(5, "status"))?,
        currency: row.text(6)?,
        billing_mode: BillingMode::parse(&row.text(7)?).ok_or_else(|| bad(7, "billing mode"))?,
        credit: row.money(8)?,
        login: row.text(9)?,
        created: row.timestamp(10)?,
        updated: row.timestamp(11)?,
        warning_level: row.money(12)?,
        shutdown_level: row.money(13)?,
        rate_limit: row.opt_int(14)?,
        rate_burst: row.opt_int(15)?,
    })
}

/// What it takes to create an account. The password arrives hashed: hashing is slow and must
/// not run on a database thread.
#[derive(Debug, Clone)]
pub struct NewAccount {
    /// Display name.
    pub name: String,
    /// The parent's internal key, for a sub account.
    pub parent_id: Option<i64>,
    /// ISO 4217 code.
    pub currency: String,
    /// Prepaid or postpaid.
    pub billing_mode: BillingMode,
    /// Opening prepaid credit (a top-up in the ledger).
    pub credit: Money,
    /// Legacy login; the sid is used when absent.
    pub login: Option<String>,
    /// argon2 hash of the legacy password.
    pub password_hash: String,
    /// SHA-256 of the first API key.
    pub key_hash: String,
    /// Public identifier of the first API key.
    pub key_id: String,
    /// Warning level of the balance.
    pub warning_level: Money,
    /// Shutdown level of the balance.
    pub shutdown_level: Money,
}

/// Inserts an account and its first API key. Fails with `UniqueViolation` on a taken login.
pub fn create(conn: &mut dyn Conn, new: &NewAccount, now: Timestamp) -> Result<Account, DbError> {
    let id = loop {
        let sid = Sid::generate();
        let login = new.login.clone().unwrap_or_else(|| sid.as_str().to_owned());
        let inserted = conn.query_opt(
            "INSERT INTO accounts (sid, name, parent_id, status, currency, billing_mode, credit, login, password_hash, created, updated, \
             warning_level, shutdown_level, below_warning) \
             VALUES ($1, $2, $3, 'active', $4, $5, $6, $7, $8, $9, $9, $10, $11, $12) ON CONFLICT (sid) DO NOTHING RETURNING id",
            params![
                &sid,
                &new.name,
                new.parent_id,
                &new.currency,
                new.billing_mode.as_str(),
                new.credit,
                login,
                &new.password_hash,
                now,
                new.warning_level,
                new.shutdown_level,
                new.credit < new.warning_level
            ],
        )?;
        if let Some(row) = inserted {
            break row.int(0)?;
        }
    };
    if new.credit != Money::ZERO {
        conn.execute(
            "INSERT INTO ledger (account_id, amount, balance_after, kind, cause, created) VALUES ($1, $2, $2, 'top-up', 'opening credit', $3)",
            params![id, new.credit, now],
        )?;
    }
    add_key(conn, id, &new.key_hash, &new.key_id, now)?;
    by_id(conn, id)?.ok_or_else(|| DbError::Other("account vanished".into()))
}

/// Adds an API key to an account.
pub fn add_key(
    conn: &mut dyn Conn,
    account_id: i64,
    key_hash: &str,
    key_id: &str,
    now: Timestamp,
) -> Result<(), DbError> {
    conn.execute(
        "INSERT INTO api_keys (account_id, key_id, key_hash, created) VALUES ($1, $2, $3, $4)",
        params![account_id, key_id, key_hash, now],
    )?;
    Ok(())
}

/// Revokes every live key of the account with that public identifier; true when one was.
pub fn revoke_key(
    conn: &mut dyn Conn,
    account_id: i64,
    key_id: &str,
    now: Timestamp,
) -> Result<bool, DbError> {
    let n = conn.execute(
        "UPDATE api_keys SET revoked = $1 WHERE account_id = $2 AND key_id = $3 AND revoked IS NULL",
        params![now, account_id, key_id],
    )?;
    Ok(n > 0)
}

/// The account owning a live (unrevoked) key with this hash.
pub fn by_key_hash(conn: &mut dyn Conn, key_hash: &str) -> Result<Option<Account>, DbError> {
    const SQL: &str = select_account!(
        " FROM accounts a LEFT JOIN accounts p ON p.id = a.parent_id \
         JOIN api_keys k ON k.account_id = a.id WHERE k.key_hash = $1 AND k.revoked IS NULL"
    );
    conn.query_opt(SQL, params![key_hash])?
        .map(|r| account_from_row(&r))
        .transpose()
}

/// An account by its sid.
pub fn by_sid(conn: &mut dyn Conn, sid: &Sid) -> Result<Option<Account>, DbError> {
    const SQL: &str = select_account!(
        " FROM accounts a LEFT JOIN accounts p ON p.id = a.parent_id WHERE a.sid = $1"
    );
    conn.query_opt(SQL, params![sid])?
        .map(|r| account_from_row(&r))
        .transpose()
}

/// An account by its internal key.
pub fn by_id(conn: &mut dyn Conn, id: i64) -> Result<Option<Account>, DbError> {
    const SQL: &str = select_account!(
        " FROM accounts a LEFT JOIN accounts p ON p.id = a.parent_id WHERE a.id = $1"
    );
    conn.query_opt(SQL, params![id])?
        .map(|r| account_from_row(&r))
        .transpose()
}

/// The billing modes of the accounts `ids`, in one statement (an account not found is left
/// out): a batch of SMS moves shows each account's in its events, whatever the number of
/// accounts in it.
pub fn billing_modes(
    conn: &mut dyn Conn,
    ids: &[i64],
) -> Result<std::collections::HashMap<i64, BillingMode>, DbError> {
    let mut out = std::collections::HashMap::with_capacity(ids.len());
    if ids.is_empty() {
        return Ok(out);
    }
    let (among, params) = crate::sql::in_list(conn.dialect(), "id", 1, crate::sql::ids(ids));
    for r in conn.query(
        &format!("SELECT id, billing_mode FROM accounts WHERE {among}"),
        &params,
    )? {
        let mode = r.text(1)?;
        let mode = BillingMode::parse(&mode)
            .ok_or_else(|| DbError::Other(format!("unknown billing mode {mode:?}")))?;
        out.insert(r.int(0)?, mode);
    }
    Ok(out)
}

/// An account and its password hash by legacy login.
pub fn by_login(conn: &mut dyn Conn, login: &str) -> Result<Option<(Account, String)>, DbError> {
    const SQL: &str = select_account!(
        ", a.password_hash FROM accounts a LEFT JOIN accounts p ON p.id = a.parent_id WHERE a.login = $1"
    );
    conn.query_opt(SQL, params![login])?
        .map(|r| Ok((account_from_row(&r)?, r.text(COLUMN_COUNT)?)))
        .transpose()
}

/// Every account, oldest first.
pub fn list(conn: &mut dyn Conn) -> Result<Vec<Account>, DbError> {
    const SQL: &str = select_account!(
        " FROM accounts a LEFT JOIN accounts p ON p.id = a.parent_id ORDER BY a.id"
    );
    conn.query(SQL, params![])?
        .iter()
        .map(account_from_row)
        .collect()
}

/// True when the database holds no account yet (first start).
pub fn is_empty(conn: &mut dyn Conn) -> Result<bool, DbError> {
    Ok(conn
        .query_opt("SELECT 1 FROM accounts LIMIT 1", params![])?
        .is_none())
}

/// A key as listed to the operator (never the key itself).
#[derive(Debug, Clone, PartialEq)]
pub struct ApiKeyInfo {
    /// Public identifier (`dt_` + 8 characters).
    pub key_id: String,
    /// Creation time.
    pub created: Timestamp,
    /// Revocation time, if revoked.
    pub revoked: Option<Timestamp>,
}

/// The keys of an account, oldest first.
pub fn keys(conn: &mut dyn Conn, account_id: i64) -> Result<Vec<ApiKeyInfo>, DbError> {
    conn.query(
        "SELECT key_id, created, revoked FROM api_keys WHERE account_id = $1 ORDER BY id",
        params![account_id],
    )?
    .iter()
    .map(|r| {
        Ok(ApiKeyInfo {
            key_id: r.text(0)?,
            created: r.timestamp(1)?,
            revoked: r.opt_timestamp(2)?,
        })
    })
    .collect()
}

/// Serializes concurrent changes to one account's rows: a row lock on PostgreSQL (several
/// nodes and connections write at once); nothing on SQLite, whose one writer already does.
pub fn lock(conn: &mut dyn Conn, account_id: i64) -> Result<(), DbError> {
    if conn.dialect() == crate::sql::Dialect::Postgres {
        conn.query(
            "SELECT id FROM accounts WHERE id = $1 FOR UPDATE",
            params![account_id],
        )?;
    }
    Ok(())
}

/// Operator changes to an account; None leaves a field as it is.
#[derive(Debug, Clone, Default)]
pub struct AccountChange {
    /// Suspend (true) or reactivate (false) by operator decision.
    pub suspended: Option<bool>,
    /// New warning level.
    pub warning_level: Option<Money>,
    /// New shutdown level.
    pub shutdown_level: Option<Money>,
    /// New rate limit (`Some(None)`: back to the node's default).
    pub rate_limit: Option<Option<i64>>,
    /// New burst (`Some(None)`: back to the node's default).
    pub rate_burst: Option<Option<i64>>,
}

/// Applies operator changes.
pub fn change(
    conn: &mut dyn Conn,
    id: i64,
    ch: &AccountChange,
    now: Timestamp,
) -> Result<(), DbError> {
    if let Some(s) = ch.suspended {
        let (status, by) = if s {
            ("suspended", Some("operator"))
        } else {
            ("active", None)
        };
        conn.execute(
            "UPDATE accounts SET status = $1, suspended_by = $2, updated = $3 WHERE id = $4",
            params![status, by, now, id],
        )?;
    }
    if let Some(w) = ch.warning_level {
        conn.execute(
            concat!(
                "UPDATE accounts AS a SET warning_level = $1, below_warning = (",
                crate::slices::balance_of!("a"),
                " < $1), updated = $2 WHERE a.id = $3"
            ),
            params![w, now, id],
        )?;
    }
    if let Some(l) = ch.shutdown_level {
        conn.execute(
            "UPDATE accounts SET shutdown_level = $1, updated = $2 WHERE id = $3",
            params![l, now, id],
        )?;
    }
    if let Some(r) = ch.rate_limit {
        conn.execute(
            "UPDATE accounts SET rate_limit = $1, updated = $2 WHERE id = $3",
            params![r, now, id],
        )?;
    }
    if let Some(b) = ch.rate_burst {
        conn.execute(
            "UPDATE accounts SET rate_burst = $1, updated = $2 WHERE id = $3",
            params![b, now, id],
        )?;
    }
    Ok(())
}
