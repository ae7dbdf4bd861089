//! Billing: `GET /billing/credit`.

use axum::Json;
use axum::extract::State;
use serde::Serialize;
use utoipa::ToSchema;

use crate::error::{AppError, AppResult, ErrorCode};
use crate::http::auth::Caller;
use crate::state::AppState;
use dialtone_domain::account::BillingMode;
use dialtone_store::billing;

/// A prepaid balance.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct Credit {
    /// Decimal amount in cents, two decimals ("150000.00" is 1500 EUR).
    #[schema(example = "150000.00")]
    pub amount: String,
    /// ISO 4217 code.
    #[schema(example = "EUR")]
    pub currency: String,
}

/// Prepaid credit balance (prepaid accounts only).
#[utoipa::path(get, path = "/billing/credit", tag = "Billing",
    responses((status = 200, description = "the balance", body = Credit)))]
pub(crate) async fn credit(
    State(state): State<AppState>,
    caller: Caller,
) -> AppResult<Json<Credit>> {
    if caller.account.billing_mode != BillingMode::Prepaid {
        return Err(AppError::new(
            ErrorCode::Forbidden,
            "only prepaid accounts have a credit balance",
        ));
    }
    let account_id = caller.account.id;
    let balance = state
        .store
        .lookup(move |c| billing::balance(c, account_id))
        .await?;
    Ok(Json(Credit {
        amount: balance.to_cents_string(),
        currency: caller.account.currency.clone(),
    }))
}

/// A billing destination: a label and its prefixes, with prices.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Destination {
    /// Label, e.g. `FR-MOBILE`.
    pub label: String,
    /// ISO 3166 country (`ZZ` for any).
    pub country: String,
    /// Line type.
    #[serde(rename = "type")]
    pub number_type: String,
    /// E.164 prefixes (the longest match wins).
    pub prefixes: Vec<String>,
    /// Price of one SMS part, in cents.
    pub sms_price: String,
    /// Price of a started minute of call, in cents.
    pub call_price_per_minute: String,
    /// Monthly price of a number, in cents.
    pub number_monthly_price: String,
    /// ISO 4217 code.
    pub currency: String,
}

/// The billing destinations and their prices.
#[utoipa::path(get, path = "/billing/destinations", tag = "Billing",
    responses((status = 200, description = "destinations", body = Vec<Destination>)))]
pub(crate) async fn destinations(
    State(state): State<AppState>,
    caller: Caller,
) -> AppResult<Json<Vec<Destination>>> {
    let rates = state.store.read(dialtone_store::rates::all).await?;
    let mut out: Vec<Destination> = Vec::new();
    for r in rates {
        match out.last_mut() {
            Some(d) if d.label == r.label => d.prefixes.push(r.prefix),
            _ => out.push(Destination {
                label: r.label,
                country: r.country,
                number_type: r.number_type,
                prefixes: vec![r.prefix],
                sms_price: r.sms_price.to_cents_string(),
                call_price_per_minute: r.call_price_per_minute.to_cents_string(),
                number_monthly_price: r.number_monthly_price.to_cents_string(),
                currency: caller.account.currency.clone(),
            }),
        }
    }
    Ok(Json(out))
}
