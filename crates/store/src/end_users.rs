//! End users: the people or companies an account assigns its numbers to.

use dialtone_domain::{Sid, Timestamp};

use crate::params;
use crate::search::{self, Paging};
use crate::sql::{Conn, DbError, SqlBuilder};

/// An end user.
#[derive(Debug, Clone, PartialEq)]
pub struct EndUser {
    /// Internal key.
    pub id: i64,
    /// Public identifier.
    pub sid: Sid,
    /// Name (1 to 64 characters).
    pub name: String,
    /// Creation time.
    pub created: Timestamp,
    /// Last change.
    pub updated: Timestamp,
}

crate::row_decoder! {
    const COLUMNS; fn from_row -> EndUser {
        id: int("id"),
        sid: sid("sid"),
        name: text("name"),
        created: timestamp("created"),
        updated: timestamp("updated"),
    }
}

/// Creates an end user.
pub fn create(
    conn: &mut dyn Conn,
    account_id: i64,
    name: &str,
    now: Timestamp,
) -> Result<EndUser, DbError> {
    loop {
        let sid = Sid::generate();
        let row = conn.query_opt(
            &format!(
                "INSERT INTO end_users (sid, account_id, name, created, updated) VALUES ($1, $2, $3, $4, $4) \
                 ON CONFLICT (sid) DO NOTHING RETURNING {COLUMNS}"
            ),
            params![&sid, account_id, name, now],
        )?;
        if let Some(r) = row {
            return from_row(&r);
        }
    }
}

/// An end user of the account.
pub fn get(conn: &mut dyn Conn, account_id: i64, sid: &Sid) -> Result<Option<EndUser>, DbError> {
    conn.query_opt(
        &format!("SELECT {COLUMNS} FROM end_users WHERE account_id = $1 AND sid = $2"),
        params![account_id, sid],
    )?
    .map(|r| from_row(&r))
    .transpose()
}

/// Renames an end user; None when the account has no such end user.
pub fn rename(
    conn: &mut dyn Conn,
    account_id: i64,
    sid: &Sid,
    name: &str,
    now: Timestamp,
) -> Result<Option<EndUser>, DbError> {
    conn.query_opt(
        &format!("UPDATE end_users SET name = $1, updated = $2 WHERE account_id = $3 AND sid = $4 RETURNING {COLUMNS}"),
        params![name, now, account_id, sid],
    )?
    .map(|r| from_row(&r))
    .transpose()
}

/// What deleting an end user did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Deletion {
    /// Gone.
    Deleted,
    /// The account has no such end user.
    NotFound,
    /// A phone number is assigned to it: nothing changed.
    InUse,
}

/// Deletes an end user unless a number is assigned to it.
pub fn delete(conn: &mut dyn Conn, account_id: i64, sid: &Sid) -> Result<Deletion, DbError> {
    let Some(user) = get(conn, account_id, sid)? else {
        return Ok(Deletion::NotFound);
    };
    if in_use(conn, user.id)? {
        return Ok(Deletion::InUse);
    }
    conn.execute("DELETE FROM end_users WHERE id = $1", params![user.id])?;
    Ok(Deletion::Deleted)
}

/// Whether a number is assigned to the end user.
pub fn in_use(conn: &mut dyn Conn, end_user_id: i64) -> Result<bool, DbError> {
    Ok(conn
        .query_opt(
            "SELECT 1 FROM numbers WHERE end_user_id = $1 LIMIT 1",
            params![end_user_id],
        )?
        .is_some())
}

/// A page of the account's end users, optionally with a name containing `name`.
pub fn search(
    conn: &mut dyn Conn,
    account_id: i64,
    name: Option<&str>,
    paging: &Paging,
) -> Result<(i64, Vec<EndUser>), DbError> {
    let mut filter = SqlBuilder::new("FROM end_users WHERE account_id = ");
    filter.bind(account_id);
    if let Some(name) = name {
        search::push_contains(&mut filter, conn.dialect(), "name", name);
    }
    let (total, rows) = search::page(conn, COLUMNS, &filter, "id", paging)?;
    Ok((total, rows.iter().map(from_row).collect::<Result<_, _>>()?))
}
