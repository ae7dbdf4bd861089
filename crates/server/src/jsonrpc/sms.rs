//! `sms.send`, `sms.get`, `sms.get_list`: SMS through the earlier interface.

use dialtone_domain::sms::{Sender, TrafficType};
use dialtone_domain::{E164, Sid, Timestamp};
use dialtone_store::sms::{self as store, SmsFilter};
use serde_json::Value;

use super::call::Call;
use super::error::{RpcError, codes};
use crate::sms::{self, Outgoing, legacy};

/// `sms.send [from, to, text, options|null]` -> the SMS hash.
pub(crate) async fn send(call: &Call<'_>) -> Result<Value, RpcError> {
    let from = call.string(0, "from")?;
    let to = call.string(1, "to")?;
    let text = call.string(2, "text")?;
    let from = Sender::parse(&from).map_err(|m| RpcError::invalid_param(0, m))?;
    let to = E164::parse(&to).map_err(|e| RpcError::invalid_param(1, e.to_string()))?;
    let options = legacy::parse_options(call.param(3))
        .map_err(|(p, m)| RpcError::new(codes::INVALID_PROPERTY, format!("{p} {m}")))?;
    let out = Outgoing {
        to,
        from,
        body: text,
        encoding: options.encoding,
        traffic_type: options.traffic_type.unwrap_or(TrafficType::Marketing),
        user_data: options.user_data,
        flash: options.flash,
        webhook_url: options.webhook_url,
        replace_stopnum: false,
    };
    match sms::send(call.state, &call.caller.account, out).await {
        Ok(s) => Ok(Value::String(s.sid.to_hash())),
        Err(e) if e.details.iter().any(|d| d.param == "to") => {
            Err(RpcError::new(codes::SMS_ROUTING, e.message))
        }
        Err(e) => Err(e.into()),
    }
}

/// `sms.get [hash]` -> the SMS object.
pub(crate) async fn get(call: &Call<'_>) -> Result<Value, RpcError> {
    let hash = call.string(0, "hash")?;
    let sid = Sid::parse(&hash).ok_or_else(|| RpcError::new(codes::NOT_FOUND, "SMS not found"))?;
    let account = call.caller.account.clone();
    let now = call.state.clock.now();
    let found = call
        .state
        .store
        .read(move |c| {
            let Some(s) = store::get(c, account.id, &sid, now)? else {
                return Ok(None);
            };
            Ok::<_, dialtone_store::DbError>(Some(legacy::sms_object(
                &s,
                account.billing_mode.as_str(),
            )))
        })
        .await?;
    found.ok_or_else(|| RpcError::new(codes::NOT_FOUND, "SMS not found"))
}

/// `sms.get_list [type, from, to]` -> the SMS of that direction created in the range
/// (`YYYY-MM-DD HH:MM:SS`, UTC), oldest first, at most 1000.
pub(crate) async fn get_list(call: &Call<'_>) -> Result<Value, RpcError> {
    let direction = match call.string(0, "type")?.as_str() {
        "IN" => "inbound",
        "OUT" => "outbound",
        _ => return Err(RpcError::invalid_param(0, "type must be IN or OUT")),
    };
    let when = |i: usize, name: &str| -> Result<Option<Timestamp>, RpcError> {
        match call.param(i) {
            Value::Null => Ok(None),
            Value::String(s) => Timestamp::parse_legacy(s).map(Some).map_err(|_| {
                RpcError::invalid_param(i, format!("{name} must be YYYY-MM-DD HH:MM:SS"))
            }),
            _ => Err(RpcError::invalid_param(
                i,
                format!("{name} must be a string"),
            )),
        }
    };
    let filter = SmsFilter {
        direction: direction.to_owned(),
        created_after: when(1, "from")?,
        created_before: when(2, "to")?,
        ..SmsFilter::default()
    };
    list(call.state, &call.caller.account, filter).await
}

/// The earlier SMS objects matching `filter` (shared with SMS REST v1.1).
pub(crate) async fn list(
    state: &crate::state::AppState,
    account: &dialtone_store::accounts::Account,
    filter: SmsFilter,
) -> Result<Value, RpcError> {
    let account = account.clone();
    let now = state.clock.now();
    let objects = state
        .store
        .read(move |c| {
            let mut out = Vec::new();
            for s in store::list(c, account.id, &filter, 1000, now)? {
                out.push(legacy::sms_object(&s, account.billing_mode.as_str()));
            }
            Ok::<_, dialtone_store::DbError>(out)
        })
        .await?;
    Ok(Value::Array(objects))
}
