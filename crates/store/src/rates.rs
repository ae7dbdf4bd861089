//! The rate table: prices per destination prefix (the longest matching prefix wins).
//!
//! Every SMS is priced, so the table is also kept in memory ([`RateCache`]): an SMS is priced
//! from memory, and the write that stores it checks the table's [`version`] (one single-row
//! read in its transaction); a version that moved sends the caller back to reload the table.
//! Imports move the version in the same transaction as the rates, so any node, and a
//! `dialtone rates import` run beside the server, is seen by the next SMS.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use dialtone_domain::Money;

use crate::params;
use crate::sql::{Conn, DbError};

/// The price of a destination prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rate {
    /// E.164 prefix (`+` alone matches every number).
    pub prefix: String,
    /// Destination label, e.g. `FR-MOBILE`.
    pub label: String,
    /// ISO country (or `ZZ` for the catch-all).
    pub country: String,
    /// Line type.
    pub number_type: String,
    /// Price of one SMS part.
    pub sms_price: Money,
    /// Price of a started minute of call.
    pub call_price_per_minute: Money,
    /// Monthly price of a number.
    pub number_monthly_price: Money,
}

crate::row_decoder! {
    const COLUMNS; fn from_row -> Rate {
        prefix: text("prefix"),
        label: text("label"),
        country: text("country"),
        number_type: text("type"),
        sms_price: money("sms_price"),
        call_price_per_minute: money("call_price_per_minute"),
        number_monthly_price: money("number_monthly_price"),
    }
}

/// Adds or replaces the rates of their prefixes and moves the table's version, so every
/// [`RateCache`] reloads.
pub fn import(conn: &mut dyn Conn, list: &[Rate]) -> Result<(), DbError> {
    for rate in list {
        upsert(conn, rate)?;
    }
    conn.execute("UPDATE rates_version SET version = version + 1", params![])?;
    Ok(())
}

fn upsert(conn: &mut dyn Conn, rate: &Rate) -> Result<(), DbError> {
    conn.execute(
        "INSERT INTO rates (prefix, label, country, type, sms_price, call_price_per_minute, number_monthly_price) \
         VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (prefix) DO UPDATE SET label = excluded.label, country = excluded.country, \
         type = excluded.type, sms_price = excluded.sms_price, call_price_per_minute = excluded.call_price_per_minute, \
         number_monthly_price = excluded.number_monthly_price",
        params![&rate.prefix, &rate.label, &rate.country, &rate.number_type, rate.sms_price, rate.call_price_per_minute, rate.number_monthly_price],
    )?;
    Ok(())
}

/// Longest prefixes considered: `+` and up to 15 digits.
const CANDIDATES: usize = 16;

/// The rate table as of one version.
pub struct RateTable {
    version: i64,
    by_prefix: HashMap<String, Rate>,
}

impl RateTable {
    /// The version of the table this is (see [`version`]).
    pub fn version(&self) -> i64 {
        self.version
    }

    /// The rate of the longest prefix matching `e164`.
    pub fn longest_match(&self, e164: &str) -> Option<&Rate> {
        (1..=e164.len().min(CANDIDATES))
            .rev()
            .filter_map(|n| e164.get(..n))
            .find_map(|prefix| self.by_prefix.get(prefix))
    }
}

/// The version of the rate table in the database (moved by every [`import`]).
pub fn version(conn: &mut dyn Conn) -> Result<i64, DbError> {
    conn.query_one("SELECT version FROM rates_version", params![])?
        .int(0)
}

/// The rate table a node keeps in memory (see the module's documentation).
#[derive(Default)]
pub struct RateCache {
    loaded: RwLock<Option<Arc<RateTable>>>,
}

impl RateCache {
    /// The table in memory, if loaded.
    pub fn get(&self) -> Option<Arc<RateTable>> {
        self.loaded.read().ok().and_then(|l| l.clone())
    }

    /// Loads the table as the database has it now, and keeps it.
    pub fn load(&self, conn: &mut dyn Conn) -> Result<Arc<RateTable>, DbError> {
        let version = version(conn)?;
        // Read after the version: these rows are at least that version (a newer import
        // moves the version again, and the next check finds it).
        let by_prefix = all(conn)?
            .into_iter()
            .map(|r| (r.prefix.clone(), r))
            .collect();
        let table = Arc::new(RateTable { version, by_prefix });
        if let Ok(mut slot) = self.loaded.write() {
            *slot = Some(table.clone());
        }
        Ok(table)
    }
}

/// The rate of the longest prefix matching `e164`.
pub fn lookup(conn: &mut dyn Conn, e164: &str) -> Result<Option<Rate>, DbError> {
    // Every prefix of the number, padded to a fixed count so the statement is cached once.
    let mut candidates: Vec<crate::Value> = (1..=e164.len().min(CANDIDATES))
        .map(|n| e164[..n].into())
        .collect();
    while candidates.len() < CANDIDATES {
        candidates.push("+".into());
    }
    static SQL: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
        format!(
            "SELECT {COLUMNS} FROM rates WHERE prefix IN ({}) ORDER BY length(prefix) DESC LIMIT 1",
            crate::sql::placeholders(1, CANDIDATES)
        )
    });
    conn.query_opt(&SQL, &candidates)?
        .map(|r| from_row(&r))
        .transpose()
}

/// Every rate, by label then prefix.
pub fn all(conn: &mut dyn Conn) -> Result<Vec<Rate>, DbError> {
    conn.query(
        &format!("SELECT {COLUMNS} FROM rates ORDER BY label, prefix"),
        params![],
    )?
    .iter()
    .map(from_row)
    .collect()
}

/// True when no rate exists (first start).
pub fn is_empty(conn: &mut dyn Conn) -> Result<bool, DbError> {
    Ok(conn
        .query_opt("SELECT 1 FROM rates LIMIT 1", params![])?
        .is_none())
}
