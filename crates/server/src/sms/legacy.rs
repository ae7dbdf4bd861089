//! The earlier interfaces' SMS object (JSON-RPC, SMS REST v1.1, and the `data` of the
//! `sms.mo` and `sms.mt.status_update` events).

use dialtone_domain::Timestamp;
use dialtone_domain::sms::SmsStatus;
use dialtone_store::sms::{Sms, StatusChange};
use serde_json::{Value, json};

/// MCC-MNC the simulated network reports (001-01 is the ITU test network).
pub const SIMULATED_NETWORK: &str = "00101";

fn legacy_status(word: &str) -> &'static str {
    SmsStatus::parse(word).map_or("CREATED", SmsStatus::legacy)
}

/// The earlier SMS object. `billing_mode` is the account's (`prepaid` or `postpaid`).
pub fn sms_object(sms: &Sms, history: &[StatusChange], billing_mode: &str) -> Value {
    let inbound = sms.direction == "inbound";
    let webhook = sms.webhook_url.as_ref().map(|u| json!({"endpoint": u}));
    let options = if inbound {
        json!({"webhook": webhook})
    } else {
        json!({
            "flash_message": sms.flash,
            "force_encoding": sms.encoding.to_ascii_uppercase(),
            "nature": sms.traffic_type.as_deref().unwrap_or("marketing").to_ascii_uppercase(),
            "user_data": sms.user_data,
            "webhook": webhook,
        })
    };
    json!({
        "type": if inbound { "IN" } else { "OUT" },
        "hash": sms.sid.to_hash(),
        "from": sms.from,
        "to": sms.to,
        "text": sms.body,
        "options": options,
        "encoding": sms.encoding.to_ascii_uppercase(),
        "user_data": sms.user_data.clone().unwrap_or_default(),
        "b_customer_mode": billing_mode.to_ascii_uppercase(),
        "b_customer_debit": sms.billing_debit.to_cents_string(),
        "network": SIMULATED_NETWORK,
        "status": legacy_status(&sms.status),
        "status_error": sms.status_error,
        "parts": sms.parts,
        "nature": sms.traffic_type.as_deref().unwrap_or("marketing").to_ascii_uppercase(),
        "date_creation": sms.created.to_legacy(),
        "date_update": sms.updated.to_legacy(),
        "date_sent": Timestamp::legacy_or_zero(sms.sent_at),
        "date_received": Timestamp::legacy_or_zero(if inbound { sms.delivered_at } else { None }),
        "status_history": history.iter().map(|h| json!({
            "old_status": legacy_status(&h.old_status),
            "new_status": legacy_status(&h.new_status),
            "updated_at": h.at.to_legacy_ms(),
        })).collect::<Vec<_>>(),
    })
}

/// `SMS.Options` of the earlier interfaces, as understood.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Options {
    /// `flash_message`.
    pub flash: bool,
    /// `force_encoding`.
    pub encoding: Option<dialtone_domain::sms::Encoding>,
    /// `nature`.
    pub traffic_type: Option<dialtone_domain::sms::TrafficType>,
    /// `user_data`.
    pub user_data: Option<String>,
    /// `webhook.endpoint`.
    pub webhook_url: Option<String>,
}

/// Parses `SMS.Options` (null means defaults). Errors name the option.
pub fn parse_options(v: &Value) -> Result<Options, (String, String)> {
    let mut out = Options::default();
    let obj = match v {
        Value::Null => return Ok(out),
        Value::Object(o) => o,
        _ => return Err(("options".into(), "must be an object or null".into())),
    };
    let bad = |k: &str, m: &str| Err((format!("options.{k}"), m.to_owned()));
    for (k, val) in obj {
        match (k.as_str(), val) {
            (_, Value::Null) => {}
            ("flash_message", Value::Bool(b)) => out.flash = *b,
            ("flash_message", _) => return bad(k, "must be a boolean"),
            ("force_encoding", Value::String(s)) => {
                match dialtone_domain::sms::Encoding::parse(s) {
                    Some(e) => out.encoding = Some(e),
                    None => return bad(k, "must be GSM or UNICODE"),
                }
            }
            ("nature", Value::String(s)) => match dialtone_domain::sms::TrafficType::parse(s) {
                Some(t) => out.traffic_type = Some(t),
                None => return bad(k, "must be MARKETING or ALERTING"),
            },
            ("user_data", Value::String(s)) if s.chars().count() <= 255 => {
                out.user_data = Some(s.clone())
            }
            ("user_data", _) => return bad(k, "must be a string of at most 255 characters"),
            ("webhook", Value::Object(w)) => match w.get("endpoint").and_then(Value::as_str) {
                Some(u)
                    if url::Url::parse(u).is_ok_and(|p| {
                        matches!(p.scheme(), "http" | "https") && p.host().is_some()
                    }) =>
                {
                    out.webhook_url = Some(u.to_owned());
                }
                _ => return bad("webhook.endpoint", "must be an absolute http or https URL"),
            },
            ("force_encoding" | "nature" | "webhook", _) => return bad(k, "has the wrong type"),
            _ => return bad(k, "unknown option"),
        }
    }
    Ok(out)
}
