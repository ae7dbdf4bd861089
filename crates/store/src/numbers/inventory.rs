//! Loading ranges into the inventory and what the store offers.

use dialtone_domain::number::InventoryRange;

use crate::params;
use crate::sql::{Conn, DbError, Value};

/// What an import did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ImportCount {
    /// Numbers added.
    pub added: u64,
    /// Numbers already in the inventory, left as they were.
    pub skipped: u64,
}

/// Numbers inserted per statement by [`import`].
const ROWS_PER_INSERT: usize = 100;

/// Adds every number of the range that is not in the inventory yet.
///
/// Rows go 100 to a statement (the first start loads thousands of numbers before the server
/// listens; one statement per number was most of the start time).
pub fn import(conn: &mut dyn Conn, range: &InventoryRange) -> Result<ImportCount, DbError> {
    let numbers: Vec<String> = range.numbers().collect();
    let mut count = ImportCount::default();
    for chunk in numbers.chunks(ROWS_PER_INSERT) {
        // Parameters $1..$7 are the range's; each number adds one.
        let mut sql = String::from(
            "INSERT INTO numbers (e164, country, type, class, prefix, area, setup_price, monthly_price) VALUES ",
        );
        let mut values: Vec<Value> = params![
            &range.country,
            range.number_type.as_str(),
            range.class.as_str(),
            &range.prefix,
            &range.area,
            range.setup_price,
            range.monthly_price
        ]
        .to_vec();
        for (i, e164) in chunk.iter().enumerate() {
            if i > 0 {
                sql.push_str(", ");
            }
            sql.push_str(&format!("(${}, $1, $2, $3, $4, $5, $6, $7)", i + 8));
            values.push(e164.as_str().into());
        }
        sql.push_str(" ON CONFLICT (e164) DO NOTHING");
        let added = conn.execute(&sql, &values)?;
        count.added += added;
        count.skipped += chunk.len() as u64 - added;
    }
    Ok(count)
}

/// True when the inventory holds no number at all.
pub fn is_empty(conn: &mut dyn Conn) -> Result<bool, DbError> {
    Ok(conn
        .query_opt("SELECT 1 FROM numbers LIMIT 1", params![])?
        .is_none())
}

/// Countries with numbers in the inventory.
pub fn countries(conn: &mut dyn Conn) -> Result<Vec<String>, DbError> {
    conn.query(
        "SELECT DISTINCT country FROM numbers ORDER BY country",
        params![],
    )?
    .iter()
    .map(|r| r.text(0))
    .collect()
}

/// The (type, class) pairs of a country's inventory.
pub fn types(conn: &mut dyn Conn, country: &str) -> Result<Vec<(String, String)>, DbError> {
    conn.query(
        "SELECT DISTINCT type, class FROM numbers WHERE country = $1 ORDER BY type, class",
        params![country],
    )?
    .iter()
    .map(|r| Ok((r.text(0)?, r.text(1)?)))
    .collect()
}

/// A prefix offered by the store and how many free numbers it has.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StorePrefix {
    /// The prefix.
    pub prefix: String,
    /// Its area name.
    pub area: String,
    /// Free numbers.
    pub available: i64,
}

/// The prefixes of a country and type, with their free numbers.
pub fn prefixes(
    conn: &mut dyn Conn,
    country: &str,
    number_type: &str,
) -> Result<Vec<StorePrefix>, DbError> {
    conn.query(
        "SELECT prefix, area, CAST(SUM(CASE WHEN account_id IS NULL AND reservation_id IS NULL THEN 1 ELSE 0 END) AS BIGINT) \
         FROM numbers WHERE country = $1 AND type = $2 GROUP BY prefix, area ORDER BY prefix, area",
        params![country, number_type],
    )?
    .iter()
    .map(|r| {
        Ok(StorePrefix {
            prefix: r.text(0)?,
            area: r.text(1)?,
            available: r.int(2)?,
        })
    })
    .collect()
}

/// An area code of the earlier interfaces: a (country, type, prefix, area) group of the
/// inventory, identified by the smallest number id in it (stable while the range exists).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AreaCode {
    /// Identifier.
    pub id: i64,
    /// ISO country.
    pub country: String,
    /// Type word.
    pub number_type: String,
    /// Store prefix.
    pub prefix: String,
    /// Area name.
    pub area: String,
}

/// The area codes of a country (and type, when given).
pub fn area_codes(
    conn: &mut dyn Conn,
    country: &str,
    number_type: Option<&str>,
) -> Result<Vec<AreaCode>, DbError> {
    conn.query(
        "SELECT MIN(id), country, type, prefix, area FROM numbers WHERE country = $1 AND ($2 = '' OR type = $2) \
         GROUP BY country, type, prefix, area ORDER BY prefix, area",
        params![country, number_type.unwrap_or("")],
    )?
    .iter()
    .map(|r| {
        Ok(AreaCode {
            id: r.int(0)?,
            country: r.text(1)?,
            number_type: r.text(2)?,
            prefix: r.text(3)?,
            area: r.text(4)?,
        })
    })
    .collect()
}

/// The area code a number id names.
pub fn area_code(conn: &mut dyn Conn, id: i64) -> Result<Option<AreaCode>, DbError> {
    conn.query_opt(
        "SELECT id, country, type, prefix, area FROM numbers WHERE id = $1",
        params![id],
    )?
    .map(|r| {
        Ok(AreaCode {
            id: r.int(0)?,
            country: r.text(1)?,
            number_type: r.text(2)?,
            prefix: r.text(3)?,
            area: r.text(4)?,
        })
    })
    .transpose()
}
