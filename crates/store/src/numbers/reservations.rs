//! Number store reservations: reserve free numbers for 5 minutes, then buy or cancel; a
//! worker expires the ones left alone.

use dialtone_domain::{Money, Timestamp};

use super::{COLUMNS, FROM, Number, from_row};
use crate::sql::{Conn, DbError, Dialect, Row, SqlBuilder};
use crate::{accounts, params};

/// Reservation states.
pub mod status {
    /// Held for the account.
    pub const RESERVED: &str = "reserved";
    /// Bought: the numbers belong to the account.
    pub const BOUGHT: &str = "bought";
    /// Cancelled by the account.
    pub const CANCELLED: &str = "cancelled";
    /// Not bought in time.
    pub const EXPIRED: &str = "expired";
}

/// A reservation.
#[derive(Debug, Clone, PartialEq)]
pub struct Reservation {
    /// Internal key.
    pub id: i64,
    /// The token that names it.
    pub token: String,
    /// `reserved`, `bought`, `cancelled` or `expired`.
    pub status: String,
    /// Country asked for.
    pub country: String,
    /// Type asked for.
    pub number_type: String,
    /// Class asked for.
    pub class: String,
    /// The numbers held.
    pub items: Vec<String>,
    /// Sum of their setup prices.
    pub setup_total: Money,
    /// Sum of their monthly prices.
    pub monthly_total: Money,
    /// End of the hold.
    pub expires: Timestamp,
}

/// What to reserve.
#[derive(Debug, Clone)]
pub struct Wanted {
    /// ISO country.
    pub country: String,
    /// Type word.
    pub number_type: String,
    /// Class word.
    pub class: String,
    /// Only numbers starting with this.
    pub prefix: Option<String>,
    /// Only numbers of this area (case-insensitive).
    pub area: Option<String>,
    /// How many (1 to 100).
    pub quantity: i64,
}

/// What reserving did.
#[derive(Debug, Clone, PartialEq)]
pub enum Reserved {
    /// Held.
    Held(Reservation),
    /// The account already holds a live reservation.
    AlreadyHolding,
    /// Fewer free numbers than asked for match; nothing was held.
    NotAvailable {
        /// How many matched.
        found: i64,
    },
}

fn reservation_from_row(conn: &mut dyn Conn, r: &Row) -> Result<Reservation, DbError> {
    let id = r.int(0)?;
    let items = conn
        .query(
            "SELECT e164 FROM reservation_items WHERE reservation_id = $1 ORDER BY e164",
            params![id],
        )?
        .iter()
        .map(|i| i.text(0))
        .collect::<Result<_, _>>()?;
    Ok(Reservation {
        id,
        token: r.text(1)?,
        status: r.text(2)?,
        country: r.text(3)?,
        number_type: r.text(4)?,
        class: r.text(5)?,
        items,
        setup_total: r.money(6)?,
        monthly_total: r.money(7)?,
        expires: r.timestamp(8)?,
    })
}

const RES_COLUMNS: &str =
    "id, token, status, country, type, class, setup_total, monthly_total, expires";

/// Expires the account's (or every) reservation whose hold has ended; returns how many.
fn expire(
    conn: &mut dyn Conn,
    account_id: Option<i64>,
    now: Timestamp,
    limit: i64,
) -> Result<usize, DbError> {
    let mut q =
        SqlBuilder::new("SELECT id FROM reservations WHERE status = 'reserved' AND expires <= ");
    q.bind(now);
    if let Some(a) = account_id {
        q.push(" AND account_id = ").bind(a);
    }
    q.push(&format!(" ORDER BY expires LIMIT {limit}"));
    if conn.dialect() == Dialect::Postgres {
        q.push(" FOR UPDATE SKIP LOCKED");
    }
    let ids: Vec<i64> = conn
        .query(q.sql(), q.params())?
        .iter()
        .map(|r| r.int(0))
        .collect::<Result<_, _>>()?;
    for id in &ids {
        conn.execute(
            "UPDATE reservations SET status = 'expired', updated = $1 WHERE id = $2 AND status = 'reserved'",
            params![now, *id],
        )?;
        conn.execute(
            "UPDATE numbers SET reservation_id = NULL WHERE reservation_id = $1",
            params![*id],
        )?;
    }
    Ok(ids.len())
}

/// Expires up to `limit` reservations whose hold has ended (the expiry worker).
pub fn expire_due(conn: &mut dyn Conn, now: Timestamp, limit: i64) -> Result<usize, DbError> {
    expire(conn, None, now, limit)
}

/// How many of the account's reservations ended unbought (expired or cancelled) since
/// `since`.
pub fn unbought_since(
    conn: &mut dyn Conn,
    account_id: i64,
    since: Timestamp,
) -> Result<i64, DbError> {
    conn.query_one(
        "SELECT count(*) FROM reservations WHERE account_id = $1 AND status IN ('expired', 'cancelled') AND updated >= $2",
        params![account_id, since],
    )?
    .int(0)
}

/// Reserves free numbers matching `wanted` for `hold_ms`.
pub fn reserve(
    conn: &mut dyn Conn,
    account_id: i64,
    wanted: &Wanted,
    token: &str,
    now: Timestamp,
    hold_ms: i64,
) -> Result<Reserved, DbError> {
    accounts::lock(conn, account_id)?;
    expire(conn, Some(account_id), now, 100)?;
    if conn
        .query_opt(
            "SELECT 1 FROM reservations WHERE account_id = $1 AND status = 'reserved'",
            params![account_id],
        )?
        .is_some()
    {
        return Ok(Reserved::AlreadyHolding);
    }
    let res_id = conn
        .query_one(
            "INSERT INTO reservations (token, account_id, status, country, type, class, setup_total, monthly_total, expires, created, updated) \
             VALUES ($1, $2, 'reserved', $3, $4, $5, 0, 0, $6, $7, $7) RETURNING id",
            params![token, account_id, &wanted.country, &wanted.number_type, &wanted.class, now.plus_ms(hold_ms), now],
        )?
        .int(0)?;
    // A materialized CTE runs the pick exactly once (an IN subquery with SKIP LOCKED may be
    // re-run by the planner and take more rows than the limit).
    let mut q = SqlBuilder::new(
        "WITH picked AS MATERIALIZED (SELECT id FROM numbers WHERE account_id IS NULL AND reservation_id IS NULL AND country = ",
    );
    q.bind(wanted.country.as_str());
    q.push(" AND type = ").bind(wanted.number_type.as_str());
    q.push(" AND class = ").bind(wanted.class.as_str());
    if let Some(prefix) = &wanted.prefix {
        q.push(" AND e164 LIKE ").bind(format!("{prefix}%"));
    }
    if let Some(area) = &wanted.area {
        q.push(" AND lower(area) = lower(")
            .bind(area.as_str())
            .push(")");
    }
    q.push(" ORDER BY e164 LIMIT ").bind(wanted.quantity);
    if conn.dialect() == Dialect::Postgres {
        q.push(" FOR UPDATE SKIP LOCKED");
    }
    q.push(") UPDATE numbers SET reservation_id = ")
        .bind(res_id);
    q.push(" FROM picked WHERE numbers.id = picked.id AND numbers.account_id IS NULL AND numbers.reservation_id IS NULL \
             RETURNING numbers.id, numbers.e164, numbers.setup_price, numbers.monthly_price");
    let rows = conn.query(q.sql(), q.params())?;
    if (rows.len() as i64) < wanted.quantity {
        // The caller rolls the transaction back; nothing stays held.
        return Ok(Reserved::NotAvailable {
            found: rows.len() as i64,
        });
    }
    let (mut setup, mut monthly) = (Money::ZERO, Money::ZERO);
    for r in &rows {
        conn.execute(
            "INSERT INTO reservation_items (reservation_id, number_id, e164) VALUES ($1, $2, $3)",
            params![res_id, r.int(0)?, r.text(1)?],
        )?;
        setup = setup.checked_add(r.money(2)?).unwrap_or(setup);
        monthly = monthly.checked_add(r.money(3)?).unwrap_or(monthly);
    }
    conn.execute(
        "UPDATE reservations SET setup_total = $1, monthly_total = $2 WHERE id = $3",
        params![setup, monthly, res_id],
    )?;
    Ok(Reserved::Held(get(conn, account_id, token)?.ok_or_else(
        || DbError::Other("reservation vanished".into()),
    )?))
}

/// The account's reservation with this token (its status as of now).
pub fn get(
    conn: &mut dyn Conn,
    account_id: i64,
    token: &str,
) -> Result<Option<Reservation>, DbError> {
    let row = conn.query_opt(
        &format!("SELECT {RES_COLUMNS} FROM reservations WHERE token = $1 AND account_id = $2"),
        params![token, account_id],
    )?;
    row.map(|r| reservation_from_row(conn, &r)).transpose()
}

/// Expires the reservation now if its hold has ended, then returns it.
pub fn get_current(
    conn: &mut dyn Conn,
    account_id: i64,
    token: &str,
    now: Timestamp,
) -> Result<Option<Reservation>, DbError> {
    expire(conn, Some(account_id), now, 100)?;
    get(conn, account_id, token)
}

/// Marks a held reservation bought and gives its numbers to the account. The caller has
/// checked the status and debited the setup price in the same transaction. None, with
/// nothing written here, when the reservation is no longer held: another session cancelled
/// or expired it after the caller read it (on PostgreSQL the status check waits for that
/// session and sees its commit), and the caller must then undo its debit by failing.
pub fn complete_purchase(
    conn: &mut dyn Conn,
    account_id: i64,
    reservation: &Reservation,
    now: Timestamp,
    paid_until: Timestamp,
) -> Result<Option<Vec<Number>>, DbError> {
    let held = conn.execute(
        "UPDATE reservations SET status = 'bought', updated = $1 WHERE id = $2 AND status = 'reserved'",
        params![now, reservation.id],
    )?;
    if held == 0 {
        return Ok(None);
    }
    conn.execute(
        "UPDATE numbers SET account_id = $1, assigned = $2, paid_until = $3, reservation_id = NULL WHERE reservation_id = $4",
        params![account_id, now, paid_until, reservation.id],
    )?;
    conn.query(
        &format!("SELECT {COLUMNS} {FROM} WHERE n.id IN (SELECT number_id FROM reservation_items WHERE reservation_id = $1) ORDER BY n.e164"),
        params![reservation.id],
    )?
    .iter()
    .map(from_row)
    .collect::<Result<_, _>>()
    .map(Some)
}

/// Cancels a held reservation; false when it was not held.
pub fn cancel(conn: &mut dyn Conn, reservation_id: i64, now: Timestamp) -> Result<bool, DbError> {
    let n = conn.execute(
        "UPDATE reservations SET status = 'cancelled', updated = $1 WHERE id = $2 AND status = 'reserved'",
        params![now, reservation_id],
    )?;
    if n == 0 {
        return Ok(false);
    }
    conn.execute(
        "UPDATE numbers SET reservation_id = NULL WHERE reservation_id = $1",
        params![reservation_id],
    )?;
    Ok(n == 1)
}
