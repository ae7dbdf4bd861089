//! Webhooks: subscriptions (shared by v2.0 and JSON-RPC) and the delivery worker.

pub(crate) mod delivery;
pub(crate) mod dispatch;
pub(crate) mod recorded_try;
pub(crate) mod signing;

use dialtone_domain::Sid;
use dialtone_store::webhooks::{self, Webhook};
use serde_json::{Value, json};

use crate::error::{AppError, AppResult};
use crate::state::AppState;

/// The seed's 15 event names: the only webhook types.
pub(crate) const EVENT_TYPES: [&str; 15] = [
    "billing.credit",
    "billing.credit_warning",
    "billing.credit_shutdown",
    "call.inbound_start",
    "call.inbound_hangup",
    "call.outbound_start",
    "call.outbound_hangup",
    "did.assigned",
    "did.unassigned",
    "job.status_update",
    "media.library.status_update",
    "media.recording.new",
    "media.recording.status_update",
    "sms.mo",
    "sms.mt.status_update",
];

/// Signing algorithms.
pub(crate) const ALGOS: [&str; 2] = ["SHA256", "SHA512"];

/// Signing options as asked for.
#[derive(Debug, Clone, Default)]
pub(crate) struct Signing {
    /// Secret: absent leaves it, `Some(None)` removes it.
    pub secret: Option<Option<String>>,
    /// Algorithm.
    pub algo: Option<String>,
}

/// Parses `options {hmac_secret, hmac_algo}`; errors name the option (prefixed `prefix`).
pub(crate) fn parse_signing(v: &Value, prefix: &str) -> AppResult<Signing> {
    let mut out = Signing::default();
    let obj = match v {
        Value::Null => return Ok(out),
        Value::Object(o) => o,
        _ => {
            return Err(AppError::invalid(
                prefix.trim_end_matches('.'),
                "must be an object",
            ));
        }
    };
    for (k, val) in obj {
        let param = format!("{prefix}{k}");
        match (k.as_str(), val) {
            ("hmac_secret", Value::Null) => out.secret = Some(None),
            ("hmac_secret", Value::String(s)) if !s.is_empty() && s.chars().count() <= 256 => {
                out.secret = Some(Some(s.clone()))
            }
            ("hmac_secret", _) => {
                return Err(AppError::invalid(
                    param,
                    "must be a string of 1 to 256 characters",
                ));
            }
            ("hmac_algo", Value::String(s)) if ALGOS.contains(&s.as_str()) => {
                out.algo = Some(s.clone())
            }
            ("hmac_algo", _) => return Err(AppError::invalid(param, "must be SHA256 or SHA512")),
            _ => return Err(AppError::invalid(param, "unknown option")),
        }
    }
    Ok(out)
}

/// Checks an event type.
pub(crate) fn check_type(t: &str, param: &str) -> AppResult<()> {
    if EVENT_TYPES.contains(&t) {
        Ok(())
    } else {
        Err(AppError::invalid(
            param,
            format!("must be one of: {}", EVENT_TYPES.join(", ")),
        ))
    }
}

/// Checks an endpoint: an absolute http(s) URL.
pub(crate) fn check_endpoint(url: &str, param: &str) -> AppResult<()> {
    let mut checks = crate::http::extract::Checks::default();
    checks.http_url(param, Some(url));
    checks.finish()
}

/// Creates a subscription.
pub(crate) async fn subscribe(
    state: &AppState,
    account_id: i64,
    event_type: String,
    endpoint: String,
    signing: Signing,
) -> AppResult<Webhook> {
    let now = state.clock.now();
    let secret = signing.secret.flatten();
    let algo = signing.algo.unwrap_or_else(|| "SHA256".to_owned());
    let config = state.config.clone();
    state
        .store
        .write(move |c| {
            crate::quotas::check(c, &config, crate::quotas::Quota::Webhooks, account_id)?;
            Ok(webhooks::create(
                c,
                account_id,
                &event_type,
                &endpoint,
                secret.as_deref(),
                &algo,
                now,
            )?)
        })
        .await
}

/// Deletes a subscription; 404 when the account has none with that sid.
pub(crate) async fn unsubscribe(state: &AppState, account_id: i64, sid: Sid) -> AppResult<()> {
    state
        .store
        .write(move |c| {
            let w = webhooks::get(c, account_id, &sid)?
                .ok_or_else(|| AppError::not_found("webhook"))?;
            webhooks::delete(c, w.id)?;
            Ok(())
        })
        .await
}

/// The earlier interface's Webhook object (the secret is never shown).
pub(crate) fn legacy(w: &Webhook) -> Value {
    json!({
        "hash": w.sid.to_hash(),
        "type": w.event_type,
        "endpoint": w.endpoint,
        "status": w.status.to_ascii_uppercase(),
        "options": {"hmac_algo": w.hmac_algo},
        "date_creation": w.created.to_legacy(),
        "date_update": w.updated.to_legacy(),
    })
}
