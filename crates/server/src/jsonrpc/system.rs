//! `system.*` methods.

use serde_json::Value;

use super::call::Call;
use super::error::RpcError;

/// `system.get_timestamp []`: the server time in Unix seconds.
pub(super) fn get_timestamp(call: &Call<'_>) -> Result<Value, RpcError> {
    Ok(Value::from(call.state.clock.now().unix_seconds()))
}

/// `billing.get_prepaid_credit []`: `{amount, currency}` (prepaid accounts only).
pub(super) async fn prepaid_credit(call: &Call<'_>) -> Result<Value, RpcError> {
    let a = &call.caller.account;
    if a.billing_mode != dialtone_domain::account::BillingMode::Prepaid {
        return Err(RpcError::new(
            super::error::codes::NOT_ALLOWED,
            "only prepaid accounts have a credit balance",
        ));
    }
    let account_id = a.id;
    let balance = call
        .state
        .store
        .lookup(move |c| dialtone_store::billing::balance(c, account_id))
        .await?;
    Ok(serde_json::json!({"amount": balance.to_cents_string(), "currency": a.currency}))
}
