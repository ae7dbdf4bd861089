//! `webhooks.subscribe`, `webhooks.unsubscribe`, `webhooks.get_list`,
//! `webhooks.get_event_types`.

use dialtone_domain::Sid;
use dialtone_store::webhooks as store;
use serde_json::Value;

use super::call::Call;
use super::error::{RpcError, codes};
use crate::webhooks::{self, EVENT_TYPES};

/// `webhooks.subscribe [type, endpoint, options|null]` -> the Webhook object.
pub(super) async fn subscribe(call: &Call<'_>) -> Result<Value, RpcError> {
    let event_type = call.string(0, "type")?;
    let endpoint = call.string(1, "endpoint")?;
    webhooks::check_type(&event_type, "type")?;
    webhooks::check_endpoint(&endpoint, "endpoint")?;
    let signing = webhooks::parse_signing(call.param(2), "options.")?;
    let w = webhooks::subscribe(
        call.state,
        call.caller.account.id,
        event_type,
        endpoint,
        signing,
    )
    .await?;
    Ok(webhooks::legacy(&w))
}

/// `webhooks.unsubscribe [hash]` -> true.
pub(super) async fn unsubscribe(call: &Call<'_>) -> Result<Value, RpcError> {
    let hash = call.string(0, "hash")?;
    let sid =
        Sid::parse(&hash).ok_or_else(|| RpcError::new(codes::NOT_FOUND, "webhook not found"))?;
    webhooks::unsubscribe(call.state, call.caller.account.id, sid).await?;
    Ok(Value::Bool(true))
}

/// `webhooks.get_list []` -> every Webhook object of the account.
pub(super) async fn get_list(call: &Call<'_>) -> Result<Value, RpcError> {
    let account = call.caller.account.id;
    let list = call
        .state
        .store
        .read(move |c| store::list(c, account))
        .await?;
    Ok(list.iter().map(webhooks::legacy).collect())
}

/// `webhooks.get_event_types []` -> the event names.
pub(super) fn get_event_types() -> Result<Value, RpcError> {
    Ok(EVENT_TYPES.iter().map(|t| Value::from(*t)).collect())
}
