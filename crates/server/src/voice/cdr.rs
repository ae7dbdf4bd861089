//! Call detail records: the v2.0 CDR (export, sandbox views, the `call` of scenario
//! expressions) and the earlier CDR.In / CDR.Out object of `call.*` events.

use dialtone_domain::call::{CallDirection, NO_ANSWER, USER_BUSY};
use dialtone_domain::{E164, Timestamp};
use dialtone_store::calls::{self, Call};
use dialtone_store::{Conn, DbError, scenarios};
use serde_json::{Value, json};

/// The call as scenario expressions see it (`call`), with its CDR so far.
pub(crate) fn call_object(k: &Call) -> Value {
    json!({
        "callid": k.callid,
        "direction": k.direction,
        "fromNumber": k.caller,
        "toNumber": k.callee,
        "fromType": from_type(&k.caller),
        "cdr": cdr(k),
    })
}

fn from_type(number: &str) -> &'static str {
    E164::parse_format(number).map_or("UNKNOWN", |n| n.line_type())
}

/// Whole seconds from `from` to `to`, rounded up (0 unless both are known).
fn seconds(from: Option<Timestamp>, to: Option<Timestamp>) -> i64 {
    match (from, to) {
        (Some(a), Some(b)) => ((b.millis() - a.millis()).max(0) + 999) / 1000,
        _ => 0,
    }
}

/// Billed seconds: per started minute of answered time.
pub(crate) fn billed_seconds(k: &Call) -> i64 {
    let answered = seconds(k.answered, k.ended);
    (answered + 59) / 60 * 60
}

/// The call detail record of v2.0: the fields of the export and of sandbox call views.
pub(crate) fn cdr(k: &Call) -> Value {
    json!({
        "callid": k.callid,
        "direction": k.direction,
        "from": k.caller,
        "to": k.callee,
        "callerNumber": k.caller,
        "callee": k.callee,
        "number": k.number,
        "scenario": k.scenario_sid,
        "status": k.status,
        "started": k.started.to_rfc3339(),
        "answered": k.answered.map(Timestamp::to_rfc3339),
        "ended": k.ended.map(Timestamp::to_rfc3339),
        "durationTotal": seconds(Some(k.started), k.ended),
        "durationAnswered": seconds(k.answered, k.ended),
        "durationBilled": if k.ended.is_some() { billed_seconds(k) } else { 0 },
        "hangupCause": k.hangup_cause,
        "hangupSource": k.hangup_source,
        "billingDebit": k.billing_debit.to_string(),
        "billingCredit": "0.00",
        "billingPaymentType": "prepaid",
        "callerName": "",
        "callerRestricted": false,
    })
}

/// The earlier CDR.In / CDR.Out object: the data of `call.*` events (CONTRACT section 5),
/// with legacy dates (`0000-00-00 00:00:00` when not applicable) and uppercase words.
pub(crate) fn legacy_cdr(c: &mut dyn Conn, k: &Call) -> Result<Value, DbError> {
    let legacy = |t: Option<Timestamp>| {
        t.map_or_else(|| "0000-00-00 00:00:00".to_owned(), Timestamp::to_legacy)
    };
    let scenario = match k
        .scenario_sid
        .as_deref()
        .and_then(dialtone_domain::Sid::parse)
    {
        Some(sid) => scenarios::get(c, k.account_id, &sid)?,
        None => None,
    };
    let mut cdr = json!({
        "callid": k.callid,
        "cli_number": k.caller,
        "cli_name": "",
        "start": k.started.to_legacy(),
        "answer": legacy(k.answered),
        "hangup": legacy(k.ended),
        "hangupsource": k.hangup_source.map(|s| s.legacy()),
        "hangupcause": k.hangup_cause,
        "duration": seconds(Some(k.started), k.ended),
        "duration_answered": seconds(k.answered, k.ended),
        "duration_billed": if k.ended.is_some() { billed_seconds(k) } else { 0 },
        "scenario_hash": scenario.as_ref().map_or(String::new(), |s| s.sid.to_hash()),
        "scenario_name": scenario.as_ref().map_or("", |s| s.name.as_str()),
        "b_customer_debit": k.billing_debit.to_cents_string(),
    });
    match k.direction {
        CallDirection::Inbound => {
            cdr["did_intl_number"] = json!(k.callee);
        }
        CallDirection::Outbound => {
            let parent = match k.parent_id {
                Some(id) => calls::by_id(c, id)?.map(|p| p.callid),
                None => None,
            };
            let dialstatus = match (k.answered, k.ended, k.hangup_cause) {
                (Some(_), _, _) => "ANSWER",
                (None, None, _) => "RINGING",
                (None, Some(_), Some(USER_BUSY)) => "BUSY",
                (None, Some(_), Some(NO_ANSWER)) => "NOANSWER",
                (None, Some(_), _) => "FAILED",
            };
            cdr["number"] = json!(k.callee);
            cdr["dialstatus"] = json!(dialstatus);
            cdr["callid_in"] = json!(parent);
        }
    }
    Ok(cdr)
}
