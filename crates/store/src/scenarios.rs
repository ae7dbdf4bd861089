//! Actions scenarios: named YAML scripts an account runs on calls, SMS and API requests, and
//! the numbers attached to them.

use dialtone_domain::{Sid, Timestamp};

use crate::params;
use crate::search::{self, Paging};
use crate::sql::{Conn, DbError, SqlBuilder};

/// A stored scenario.
#[derive(Debug, Clone, PartialEq)]
pub struct Scenario {
    /// Internal key.
    pub id: i64,
    /// Public identifier.
    pub sid: Sid,
    /// Owner.
    pub account_id: i64,
    /// Name (1 to 64 characters).
    pub name: String,
    /// The YAML script, as sent.
    pub script: String,
    /// Creation time.
    pub created: Timestamp,
    /// Last change.
    pub updated: Timestamp,
}

/// A number attached to a scenario, as the scenario object lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct AttachedNumber {
    /// E.164.
    pub e164: String,
    /// Class.
    pub class: String,
    /// Type.
    pub kind: String,
    /// Country code.
    pub country: String,
    /// When it was bought.
    pub assigned: Option<Timestamp>,
}

crate::row_decoder! {
    const COLUMNS; fn from_row -> Scenario {
        id: int("id"),
        sid: sid("sid"),
        account_id: int("account_id"),
        name: text("name"),
        script: text("script"),
        created: timestamp("created"),
        updated: timestamp("updated"),
    }
}

/// Creates a scenario (the caller has validated the script).
pub fn create(
    conn: &mut dyn Conn,
    account_id: i64,
    name: &str,
    script: &str,
    now: Timestamp,
) -> Result<Scenario, DbError> {
    loop {
        let sid = Sid::generate();
        let row = conn.query_opt(
            &format!(
                "INSERT INTO scenarios (sid, account_id, name, script, created, updated) VALUES ($1, $2, $3, $4, $5, $5) \
                 ON CONFLICT (sid) DO NOTHING RETURNING {COLUMNS}"
            ),
            params![&sid, account_id, name, script, now],
        )?;
        if let Some(r) = row {
            return from_row(&r);
        }
    }
}

/// A scenario of the account.
pub fn get(conn: &mut dyn Conn, account_id: i64, sid: &Sid) -> Result<Option<Scenario>, DbError> {
    conn.query_opt(
        &format!("SELECT {COLUMNS} FROM scenarios WHERE account_id = $1 AND sid = $2"),
        params![account_id, sid],
    )?
    .map(|r| from_row(&r))
    .transpose()
}

/// A scenario by its internal key (inbound traffic finds it through the number).
pub fn by_id(conn: &mut dyn Conn, id: i64) -> Result<Option<Scenario>, DbError> {
    conn.query_opt(
        &format!("SELECT {COLUMNS} FROM scenarios WHERE id = $1"),
        params![id],
    )?
    .map(|r| from_row(&r))
    .transpose()
}

/// The scenario attached to a number of this platform, if any.
pub fn attached_to(conn: &mut dyn Conn, e164: &str) -> Result<Option<Scenario>, DbError> {
    conn.query_opt(
        &format!(
            "SELECT {} FROM scenarios s JOIN numbers n ON n.scenario_id = s.id WHERE n.e164 = $1 AND n.account_id = s.account_id",
            COLUMNS
                .split(", ")
                .map(|c| format!("s.{c}"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        params![e164],
    )?
    .map(|r| from_row(&r))
    .transpose()
}

/// Changes the name and/or the script; None when the account has no such scenario.
pub fn update(
    conn: &mut dyn Conn,
    account_id: i64,
    sid: &Sid,
    name: Option<&str>,
    script: Option<&str>,
    now: Timestamp,
) -> Result<Option<Scenario>, DbError> {
    conn.query_opt(
        &format!(
            "UPDATE scenarios SET name = COALESCE($1, name), script = COALESCE($2, script), updated = $3 \
             WHERE account_id = $4 AND sid = $5 RETURNING {COLUMNS}"
        ),
        params![name, script, now, account_id, sid],
    )?
    .map(|r| from_row(&r))
    .transpose()
}

/// Deletes a scenario and detaches its numbers; false when the account has no such scenario.
pub fn delete(conn: &mut dyn Conn, account_id: i64, sid: &Sid) -> Result<bool, DbError> {
    let Some(s) = get(conn, account_id, sid)? else {
        return Ok(false);
    };
    crate::numbers::owned::detach_scenario(conn, s.id)?;
    conn.execute("DELETE FROM scenarios WHERE id = $1", params![s.id])?;
    Ok(true)
}

/// The numbers attached to a scenario, by number.
pub fn numbers(conn: &mut dyn Conn, scenario_id: i64) -> Result<Vec<AttachedNumber>, DbError> {
    conn.query(
        "SELECT e164, class, type, country, assigned FROM numbers WHERE scenario_id = $1 ORDER BY e164",
        params![scenario_id],
    )?
    .iter()
    .map(|r| {
        Ok(AttachedNumber {
            e164: r.text(0)?,
            class: r.text(1)?,
            kind: r.text(2)?,
            country: r.text(3)?,
            assigned: r.opt_timestamp(4)?,
        })
    })
    .collect()
}

/// A page of the account's scenarios, optionally with a name containing `name`.
pub fn search(
    conn: &mut dyn Conn,
    account_id: i64,
    name: Option<&str>,
    paging: &Paging,
) -> Result<(i64, Vec<Scenario>), DbError> {
    let mut filter = SqlBuilder::new("FROM scenarios WHERE account_id = ");
    filter.bind(account_id);
    if let Some(name) = name {
        search::push_contains(&mut filter, conn.dialect(), "name", name);
    }
    let (total, rows) = search::page(conn, COLUMNS, &filter, "id", paging)?;
    Ok((total, rows.iter().map(from_row).collect::<Result<_, _>>()?))
}
