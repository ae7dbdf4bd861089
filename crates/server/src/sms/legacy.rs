//! The earlier interfaces' SMS object (JSON-RPC, SMS REST v1.1, and the `data` of the
//! `sms.mo` and `sms.mt.status_update` events).

use dialtone_domain::Timestamp;
use dialtone_domain::sms::SmsStatus;
use dialtone_store::sms::Sms;
use serde::Serialize;
use serde_json::Value;

/// MCC-MNC the simulated network reports (001-01 is the ITU test network).
pub(crate) const SIMULATED_NETWORK: &str = "00101";

fn legacy_status(word: &str) -> &'static str {
    SmsStatus::parse(word).map_or("CREATED", SmsStatus::legacy)
}

/// The earlier SMS object, as JSON. `billing_mode` is the account's (`prepaid` or
/// `postpaid`).
pub(crate) fn sms_object(sms: &Sms, billing_mode: &str) -> Value {
    serde_json::to_value(LegacySms::new(sms, billing_mode)).unwrap_or(Value::Null)
}

/// The earlier SMS object as the text of an event's `data` (serialized once, straight from
/// the SMS: the SMS worker writes one per status move).
pub(crate) fn sms_object_text(sms: &Sms, billing_mode: &str) -> String {
    serde_json::to_string(&LegacySms::new(sms, billing_mode)).unwrap_or_default()
}

/// What an event nobody receives keeps of the SMS object: the fields that name the SMS and
/// its new status, in the object's own shape (see `sms::events`).
pub(crate) fn sms_summary_text(sms: &Sms) -> String {
    #[derive(Serialize)]
    struct Summary<'a> {
        hash: String,
        status: &'a str,
    }
    serde_json::to_string(&Summary {
        hash: sms.sid.to_hash(),
        status: legacy_status(&sms.status),
    })
    .unwrap_or_default()
}

/// The earlier SMS object. Its fields, and those of the objects in it, are declared in
/// alphabetical order: the order a JSON object has in this project (`serde_json` keeps keys
/// sorted), so the text is the same whichever way it is made (a test checks it).
#[derive(Serialize)]
struct LegacySms<'a> {
    b_customer_debit: String,
    b_customer_mode: String,
    date_creation: String,
    date_received: String,
    date_sent: String,
    date_update: String,
    encoding: String,
    from: &'a str,
    hash: String,
    nature: String,
    network: &'static str,
    options: LegacyOptions<'a>,
    parts: i64,
    status: &'static str,
    status_error: &'a str,
    status_history: Vec<LegacyMove>,
    text: &'a str,
    to: &'a str,
    #[serde(rename = "type")]
    direction: &'static str,
    user_data: &'a str,
}

/// `SMS.Options` as shown: inbound SMS only carry `webhook`.
#[derive(Serialize)]
#[serde(untagged)]
enum LegacyOptions<'a> {
    Inbound {
        webhook: Option<Endpoint<'a>>,
    },
    Outbound {
        flash_message: bool,
        force_encoding: String,
        nature: String,
        user_data: Option<&'a str>,
        webhook: Option<Endpoint<'a>>,
    },
}

#[derive(Serialize)]
struct Endpoint<'a> {
    endpoint: &'a str,
}

#[derive(Serialize)]
struct LegacyMove {
    new_status: &'static str,
    old_status: &'static str,
    updated_at: String,
}

impl<'a> LegacySms<'a> {
    fn new(sms: &'a Sms, billing_mode: &str) -> Self {
        let inbound = sms.direction == "inbound";
        let webhook = sms
            .webhook_url
            .as_deref()
            .map(|endpoint| Endpoint { endpoint });
        let nature = sms
            .traffic_type
            .as_deref()
            .unwrap_or("marketing")
            .to_ascii_uppercase();
        let options = if inbound {
            LegacyOptions::Inbound { webhook }
        } else {
            LegacyOptions::Outbound {
                flash_message: sms.flash,
                force_encoding: sms.encoding.to_ascii_uppercase(),
                nature: nature.clone(),
                user_data: sms.user_data.as_deref(),
                webhook,
            }
        };
        Self {
            b_customer_debit: sms.billing_debit.to_cents_string(),
            b_customer_mode: billing_mode.to_ascii_uppercase(),
            date_creation: sms.created.to_legacy(),
            date_received: Timestamp::legacy_or_zero(if inbound { sms.delivered_at } else { None }),
            date_sent: Timestamp::legacy_or_zero(sms.sent_at),
            date_update: sms.updated.to_legacy(),
            encoding: sms.encoding.to_ascii_uppercase(),
            from: &sms.from,
            hash: sms.sid.to_hash(),
            nature,
            network: SIMULATED_NETWORK,
            options,
            parts: sms.parts,
            status: legacy_status(&sms.status),
            status_error: &sms.status_error,
            status_history: sms
                .history
                .iter()
                .map(|h| LegacyMove {
                    new_status: legacy_status(&h.new_status),
                    old_status: legacy_status(&h.old_status),
                    updated_at: h.at.to_legacy_ms(),
                })
                .collect(),
            text: &sms.body,
            to: &sms.to,
            direction: if inbound { "IN" } else { "OUT" },
            user_data: sms.user_data.as_deref().unwrap_or_default(),
        }
    }
}

/// `SMS.Options` of the earlier interfaces, as understood.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Options {
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
pub(crate) fn parse_options(v: &Value) -> Result<Options, (String, String)> {
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

#[cfg(test)]
mod tests {
    use dialtone_domain::{Money, Sid};
    use dialtone_store::sms::StatusChange;

    use super::*;

    fn sms(direction: &str) -> Sms {
        let t = Timestamp::from_millis(1_790_000_000_123);
        Sms {
            id: 1,
            sid: Sid::generate(),
            account_id: 1,
            direction: direction.to_owned(),
            from: "SMS".to_owned(),
            to: "+447700900555".to_owned(),
            body: "Caf\u{e9} \"quoted\"\n".to_owned(),
            encoding: "gsm".to_owned(),
            parts: 1,
            traffic_type: (direction == "outbound").then(|| "alerting".to_owned()),
            status: "sent".to_owned(),
            status_error: String::new(),
            user_data: Some("ref-1".to_owned()),
            flash: true,
            webhook_url: Some("https://example.org/hook".to_owned()),
            billing_debit: Money::from_cents(450),
            carrier: "simulated".to_owned(),
            next_at: None,
            created: t,
            updated: t.plus_ms(400),
            sent_at: Some(t.plus_ms(400)),
            delivered_at: Some(t),
            history: vec![
                StatusChange {
                    old_status: "created".to_owned(),
                    new_status: "pending".to_owned(),
                    at: t.plus_ms(200),
                },
                StatusChange {
                    old_status: "pending".to_owned(),
                    new_status: "sent".to_owned(),
                    at: t.plus_ms(400),
                },
            ],
            plan_sent_at: None,
            plan_queued_at: None,
            plan_delivered_at: None,
        }
    }

    #[test]
    fn the_event_text_is_the_sorted_json_object() {
        for direction in ["outbound", "inbound"] {
            let sms = sms(direction);
            let value = sms_object(&sms, "prepaid");
            assert_eq!(sms_object_text(&sms, "prepaid"), value.to_string());
            assert_eq!(value["status"], "SENT");
            assert_eq!(value["status_history"][1]["new_status"], "SENT");
            assert_eq!(
                value["status_history"][1]["updated_at"],
                "2026-09-21 14:13:20.523"
            );
            assert_eq!(
                value["options"]["webhook"]["endpoint"],
                "https://example.org/hook"
            );
        }
        let outbound = sms_object(&sms("outbound"), "prepaid");
        assert_eq!(outbound["type"], "OUT");
        assert_eq!(outbound["options"]["nature"], "ALERTING");
        assert_eq!(outbound["date_received"], "0000-00-00 00:00:00");
        let inbound = sms_object(&sms("inbound"), "postpaid");
        assert_eq!(inbound["type"], "IN");
        assert_eq!(inbound["b_customer_mode"], "POSTPAID");
        assert_eq!(
            inbound["options"].as_object().map(|o| o.len()),
            Some(1),
            "inbound options only carry the webhook"
        );
    }
}
