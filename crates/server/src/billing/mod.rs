//! Billing: the rate table, prices per destination.

pub mod rates;
