//! Sessions of the web console: who a browser is signed in as (an account, or the operator),
//! by the digest of the token its cookie carries, with the CSRF token its page must echo;
//! and the one-time links that open a session (kind `link`, consumed by their first use).

use dialtone_domain::Timestamp;

use crate::params;
use crate::sql::{Conn, DbError};

/// Who a session acts as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionKind {
    /// An account's session: the console of its resources.
    Account,
    /// The operator's (signed in with the admin token): every account, the connectors.
    Admin,
    /// A one-time link, exchanged for an account's session by its first use.
    Link,
}

impl SessionKind {
    fn as_str(self) -> &'static str {
        match self {
            Self::Account => "account",
            Self::Admin => "admin",
            Self::Link => "link",
        }
    }

    fn parse(word: &str) -> Result<Self, DbError> {
        match word {
            "account" => Ok(Self::Account),
            "admin" => Ok(Self::Admin),
            "link" => Ok(Self::Link),
            other => Err(DbError::Other(format!(
                "unknown console session kind {other:?}"
            ))),
        }
    }
}

/// A live session.
#[derive(Debug, Clone)]
pub struct Session {
    /// Account or operator.
    pub kind: SessionKind,
    /// The account (None for the operator).
    pub account_id: Option<i64>,
    /// The token the page must send in `x-csrf-token`.
    pub csrf: String,
    /// When it ends.
    pub expires: Timestamp,
}

/// A session to open.
#[derive(Debug, Clone)]
pub struct NewSession<'a> {
    /// SHA-256 of the cookie's token (hex).
    pub token_hash: &'a str,
    /// Account, operator or one-time link.
    pub kind: SessionKind,
    /// The account (None for the operator).
    pub account_id: Option<i64>,
    /// The CSRF token.
    pub csrf: &'a str,
    /// When it ends.
    pub expires: Timestamp,
}

/// Opens a session, first dropping the expired ones and, past `keep` live sessions of the
/// same account (or of the operator), the oldest: a client signing in in a loop holds a
/// bounded number of rows.
pub fn open(
    conn: &mut dyn Conn,
    new: &NewSession<'_>,
    keep: i64,
    now: Timestamp,
) -> Result<(), DbError> {
    conn.execute(
        "DELETE FROM console_sessions WHERE expires <= $1",
        params![now],
    )?;
    let kind = new.kind.as_str();
    let owner = "(account_id = $1 OR (account_id IS NULL AND $1 IS NULL)) AND kind = $2";
    conn.execute(
        &format!(
            "DELETE FROM console_sessions WHERE {owner} AND id NOT IN \
             (SELECT id FROM console_sessions WHERE {owner} ORDER BY id DESC LIMIT $3)"
        ),
        params![new.account_id, kind, keep.saturating_sub(1).max(0)],
    )?;
    conn.execute(
        "INSERT INTO console_sessions (token_hash, kind, account_id, csrf, created, expires) \
         VALUES ($1, $2, $3, $4, $5, $6)",
        params![
            new.token_hash,
            kind,
            new.account_id,
            new.csrf,
            now,
            new.expires
        ],
    )?;
    Ok(())
}

/// The live session of a token digest (not a link: links are only consumed).
pub fn find(
    conn: &mut dyn Conn,
    token_hash: &str,
    now: Timestamp,
) -> Result<Option<Session>, DbError> {
    let Some(row) = conn.query_opt(
        "SELECT kind, account_id, csrf, expires FROM console_sessions \
         WHERE token_hash = $1 AND expires > $2 AND kind <> 'link'",
        params![token_hash, now],
    )?
    else {
        return Ok(None);
    };
    Ok(Some(Session {
        kind: SessionKind::parse(&row.text(0)?)?,
        account_id: row.opt_int(1)?,
        csrf: row.text(2)?,
        expires: row.timestamp(3)?,
    }))
}

/// Consumes a live one-time link: its account, once.
pub fn take_link(
    conn: &mut dyn Conn,
    token_hash: &str,
    now: Timestamp,
) -> Result<Option<i64>, DbError> {
    let Some(row) = conn.query_opt(
        "DELETE FROM console_sessions WHERE token_hash = $1 AND kind = 'link' AND expires > $2 \
         RETURNING account_id",
        params![token_hash, now],
    )?
    else {
        return Ok(None);
    };
    row.opt_int(0)
}

/// Ends a session.
pub fn close(conn: &mut dyn Conn, token_hash: &str) -> Result<(), DbError> {
    conn.execute(
        "DELETE FROM console_sessions WHERE token_hash = $1",
        params![token_hash],
    )?;
    Ok(())
}
