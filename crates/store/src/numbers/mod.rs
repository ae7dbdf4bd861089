//! Phone numbers: the inventory (every number the platform can sell, one row each), the
//! number store's reservations, and numbers owned by accounts.
//!
//! A number is free when it has no owner and no reservation; reserving sets its
//! `reservation_id` with a conditional update, so two accounts (or two nodes) racing for the
//! same number can never both get it.

pub mod inventory;
pub mod owned;
pub mod reservations;

use dialtone_domain::{Money, Sid, Timestamp};

use crate::sql::{DbError, Row};

/// A number as stored, with its owner's attachments.
#[derive(Debug, Clone, PartialEq)]
pub struct Number {
    /// Internal key.
    pub id: i64,
    /// The number.
    pub e164: String,
    /// ISO 3166 country.
    pub country: String,
    /// Line type (v2.0 word).
    pub number_type: String,
    /// Class (v2.0 word).
    pub class: String,
    /// Store prefix.
    pub prefix: String,
    /// Store area.
    pub area: String,
    /// One-off price.
    pub setup_price: Money,
    /// Monthly price.
    pub monthly_price: Money,
    /// Owner, when bought.
    pub account_id: Option<i64>,
    /// When bought.
    pub assigned: Option<Timestamp>,
    /// Monthly fees are paid up to this instant.
    pub paid_until: Option<Timestamp>,
    /// Attached scenario (sid, name).
    pub scenario: Option<(Sid, String)>,
    /// Assigned end user (sid, name).
    pub end_user: Option<(Sid, String)>,
}

pub(crate) const COLUMNS: &str = "n.id, n.e164, n.country, n.type, n.class, n.prefix, n.area, n.setup_price, n.monthly_price, \
     n.account_id, n.assigned, n.paid_until, s.sid, s.name, u.sid, u.name";
pub(crate) const FROM: &str = "FROM numbers n LEFT JOIN scenarios s ON s.id = n.scenario_id LEFT JOIN end_users u ON u.id = n.end_user_id";

pub(crate) fn from_row(r: &Row) -> Result<Number, DbError> {
    let pair = |a: usize, b: usize| -> Result<Option<(Sid, String)>, DbError> {
        Ok(match (r.opt_text(a)?, r.opt_text(b)?) {
            (Some(sid), Some(name)) => Some((Sid::from_stored(sid), name)),
            _ => None,
        })
    };
    Ok(Number {
        id: r.int(0)?,
        e164: r.text(1)?,
        country: r.text(2)?,
        number_type: r.text(3)?,
        class: r.text(4)?,
        prefix: r.text(5)?,
        area: r.text(6)?,
        setup_price: r.money(7)?,
        monthly_price: r.money(8)?,
        account_id: r.opt_int(9)?,
        assigned: r.opt_timestamp(10)?,
        paid_until: r.opt_timestamp(11)?,
        scenario: pair(12, 13)?,
        end_user: pair(14, 15)?,
    })
}
