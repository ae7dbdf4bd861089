//! Billing: `GET /billing/credit`.

use axum::Json;
use axum::extract::State;
use serde::Serialize;
use utoipa::ToSchema;

use crate::http::auth::Caller;
use crate::http::error::{ApiError, ApiResult};
use crate::state::AppState;
use dialtone_domain::account::BillingMode;

/// A prepaid balance.
#[derive(Debug, Serialize, ToSchema)]
pub struct Credit {
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
pub async fn credit(State(_state): State<AppState>, caller: Caller) -> ApiResult<Json<Credit>> {
    if caller.account.billing_mode != BillingMode::Prepaid {
        return Err(ApiError::forbidden(
            "forbidden",
            "only prepaid accounts have a credit balance",
        ));
    }
    Ok(Json(Credit {
        amount: caller.account.credit.to_cents_string(),
        currency: caller.account.currency.clone(),
    }))
}
