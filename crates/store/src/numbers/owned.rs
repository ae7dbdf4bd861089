//! Numbers owned by an account: search, attachments to a scenario and an end user, release.

use dialtone_domain::Sid;

use super::{COLUMNS, FROM, Number, from_row};
use crate::params;
use crate::search::{self, Paging};
use crate::sql::{Conn, DbError, SqlBuilder};

/// Filters of `GET /numbers`.
#[derive(Debug, Clone, Default)]
pub struct OwnedFilter {
    /// Attached to this scenario.
    pub scenario: Option<Sid>,
    /// Class word.
    pub class: Option<String>,
    /// Type word.
    pub number_type: Option<String>,
    /// Digits the number contains (`+` allowed at the start).
    pub contains: Option<String>,
    /// Only numbers attached to no scenario.
    pub detached: bool,
}

/// A page of the account's numbers.
pub fn search(
    conn: &mut dyn Conn,
    account_id: i64,
    filter: &OwnedFilter,
    paging: &Paging,
) -> Result<(i64, Vec<Number>), DbError> {
    let mut q = SqlBuilder::new(FROM);
    q.push(" WHERE n.account_id = ").bind(account_id);
    if let Some(sid) = &filter.scenario {
        q.push(" AND s.sid = ").bind(sid);
    }
    if let Some(class) = &filter.class {
        q.push(" AND n.class = ").bind(class.as_str());
    }
    if let Some(t) = &filter.number_type {
        q.push(" AND n.type = ").bind(t.as_str());
    }
    if let Some(digits) = &filter.contains {
        // Only digits and a leading + reach here: no LIKE wildcard can be injected.
        q.push(" AND n.e164 LIKE ").bind(format!("%{digits}%"));
    }
    if filter.detached {
        q.push(" AND n.scenario_id IS NULL");
    }
    let (total, rows) = search::page(conn, COLUMNS, &q, "n.id", paging)?;
    Ok((total, rows.iter().map(from_row).collect::<Result<_, _>>()?))
}

/// One of the account's numbers.
pub fn get(conn: &mut dyn Conn, account_id: i64, e164: &str) -> Result<Option<Number>, DbError> {
    conn.query_opt(
        &format!("SELECT {COLUMNS} {FROM} WHERE n.account_id = $1 AND n.e164 = $2"),
        params![account_id, e164],
    )?
    .map(|r| from_row(&r))
    .transpose()
}

/// Any number of the inventory, owned or not (for routing: who owns this number?).
pub fn by_e164(conn: &mut dyn Conn, e164: &str) -> Result<Option<Number>, DbError> {
    conn.query_opt(
        &format!("SELECT {COLUMNS} {FROM} WHERE n.e164 = $1"),
        params![e164],
    )?
    .map(|r| from_row(&r))
    .transpose()
}

/// The owners of the numbers among `e164s` that the inventory holds (an unowned number maps
/// to `None`; a number not in the inventory is absent): one statement for them all.
pub fn owners_of(
    conn: &mut dyn Conn,
    e164s: &[String],
) -> Result<std::collections::HashMap<String, Option<i64>>, DbError> {
    let mut out = std::collections::HashMap::with_capacity(e164s.len());
    if e164s.is_empty() {
        return Ok(out);
    }
    let list = crate::sql::Array::Text(e164s.iter().cloned().map(Some).collect());
    let (among, params) = crate::sql::in_list(conn.dialect(), "e164", 1, list);
    let rows = conn.query(
        &format!("SELECT e164, account_id FROM numbers WHERE {among}"),
        &params,
    )?;
    for r in rows {
        out.insert(r.text(0)?, r.opt_int(1)?);
    }
    Ok(out)
}

/// Why an attachment could not be made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Attach {
    /// Done.
    Done,
    /// The account owns no such number.
    NoNumber,
    /// The account has no such scenario or end user.
    NoTarget,
}

/// Attaches the number to one of the account's scenarios, or detaches it (None).
pub fn set_scenario(
    conn: &mut dyn Conn,
    account_id: i64,
    e164: &str,
    scenario: Option<&Sid>,
) -> Result<Attach, DbError> {
    set_link(conn, account_id, e164, "scenario_id", "scenarios", scenario)
}

/// Assigns the number to one of the account's end users, or unassigns it (None).
pub fn set_end_user(
    conn: &mut dyn Conn,
    account_id: i64,
    e164: &str,
    end_user: Option<&Sid>,
) -> Result<Attach, DbError> {
    set_link(conn, account_id, e164, "end_user_id", "end_users", end_user)
}

fn set_link(
    conn: &mut dyn Conn,
    account_id: i64,
    e164: &str,
    column: &str,
    table: &str,
    target: Option<&Sid>,
) -> Result<Attach, DbError> {
    let target_id = match target {
        Some(sid) => {
            let row = conn.query_opt(
                &format!("SELECT id FROM {table} WHERE account_id = $1 AND sid = $2"),
                params![account_id, sid],
            )?;
            match row {
                Some(r) => Some(r.int(0)?),
                None => return Ok(Attach::NoTarget),
            }
        }
        None => None,
    };
    let n = conn.execute(
        &format!("UPDATE numbers SET {column} = $1 WHERE account_id = $2 AND e164 = $3"),
        params![target_id, account_id, e164],
    )?;
    Ok(if n == 1 {
        Attach::Done
    } else {
        Attach::NoNumber
    })
}

/// Releases the number back to the inventory at once; returns it as it was, or None when the
/// account does not own it.
pub fn release(
    conn: &mut dyn Conn,
    account_id: i64,
    e164: &str,
) -> Result<Option<Number>, DbError> {
    let Some(number) = get(conn, account_id, e164)? else {
        return Ok(None);
    };
    conn.execute(
        "UPDATE numbers SET account_id = NULL, assigned = NULL, paid_until = NULL, scenario_id = NULL, end_user_id = NULL WHERE id = $1",
        params![number.id],
    )?;
    Ok(Some(number))
}

/// Detaches every number attached to a scenario (the scenario is being deleted).
pub fn detach_scenario(conn: &mut dyn Conn, scenario_id: i64) -> Result<u64, DbError> {
    conn.execute(
        "UPDATE numbers SET scenario_id = NULL WHERE scenario_id = $1",
        params![scenario_id],
    )
}

/// One of the account's numbers by internal key (the earlier interfaces' DID hash).
pub fn by_id(conn: &mut dyn Conn, account_id: i64, id: i64) -> Result<Option<Number>, DbError> {
    conn.query_opt(
        &format!("SELECT {COLUMNS} {FROM} WHERE n.account_id = $1 AND n.id = $2"),
        params![account_id, id],
    )?
    .map(|r| from_row(&r))
    .transpose()
}
