//! Call legs as the platform records them: a leg opened (ringing, with its `call.*_start`
//! event), answered, written on its timeline, and ended once (its hangup, its per-minute
//! debit and its `call.*_hangup` event), whatever network carries it.

use dialtone_domain::Money;
use dialtone_domain::Timestamp;
use dialtone_domain::call::{CallDirection, HangupSource};
use dialtone_store::calls::{self, Call, NewCall};
use dialtone_store::{Conn, DbError, billing, events, rates};
use serde_json::{Value, json};

use super::cdr::{billed_seconds, legacy_cdr};

/// Writes what happened on a call on its timeline (the sandbox and the console show it).
pub(crate) fn timeline(
    c: &mut dyn Conn,
    call_id: i64,
    kind: &str,
    data: &Value,
    now: Timestamp,
) -> Result<(), DbError> {
    calls::log(c, call_id, kind, &data.to_string(), now)
}

/// Emits an event of an account from inside the transaction that made it happen.
pub(crate) fn emit(
    c: &mut dyn Conn,
    account_id: i64,
    kind: &str,
    data: &Value,
    now: Timestamp,
) -> Result<(), DbError> {
    events::emit(c, account_id, kind, &data.to_string(), now)?;
    Ok(())
}

/// The event a leg's start or end emits: `call.inbound_*` or `call.outbound_*`.
fn event(direction: CallDirection, what: &str) -> String {
    let way = match direction {
        CallDirection::Inbound => "inbound",
        CallDirection::Outbound => "outbound",
    };
    format!("call.{way}_{what}")
}

/// Opens a leg (ringing) and emits its `call.*_start` event.
pub(crate) fn open(c: &mut dyn Conn, new: &NewCall<'_>, now: Timestamp) -> Result<Call, DbError> {
    let call = calls::create(c, new, now)?;
    let data = legacy_cdr(c, &call)?;
    emit(
        c,
        call.account_id,
        &event(call.direction, "start"),
        &data,
        now,
    )?;
    Ok(call)
}

/// Answers a ringing leg and writes it on its timeline (with `data`); false when it was
/// not ringing.
pub(crate) fn answer(
    c: &mut dyn Conn,
    call: &Call,
    data: &Value,
    now: Timestamp,
) -> Result<bool, DbError> {
    if !calls::answer(c, call.id, now)? {
        return Ok(false);
    }
    timeline(c, call.id, "answered", data, now)?;
    Ok(true)
}

/// A target that answered a dial.
pub(crate) struct Dialled<'a> {
    /// The caller id presented.
    pub(crate) caller: &'a str,
    /// The number that answered.
    pub(crate) target: &'a str,
    /// The network that carries it.
    pub(crate) network: &'a str,
    /// The call id it was placed under.
    pub(crate) callid: &'a str,
}

/// Opens the outbound leg a scenario dialled from `parent`, answered by its target.
pub(crate) fn open_dialled(
    c: &mut dyn Conn,
    parent: &Call,
    scenario_sid: &str,
    dialled: &Dialled<'_>,
    now: Timestamp,
) -> Result<Call, DbError> {
    let target = dialled.target;
    let leg = open(
        c,
        &NewCall {
            account_id: parent.account_id,
            direction: CallDirection::Outbound,
            caller: dialled.caller,
            callee: target,
            number: parent.number.as_deref(),
            scenario_sid: Some(scenario_sid),
            parent_id: Some(parent.id),
            network: dialled.network,
            callid: Some(dialled.callid),
        },
        now,
    )?;
    calls::answer(c, leg.id, now)?;
    timeline(
        c,
        parent.id,
        "connected",
        &json!({"target": target, "callid": leg.callid}),
        now,
    )?;
    Ok(calls::by_id(c, leg.id)?.unwrap_or(leg))
}

/// Ends one leg: stores the hangup, debits its minutes, emits `call.*_hangup`. None when it
/// had already ended (only one hangup counts).
pub(crate) fn end(
    c: &mut dyn Conn,
    call: &Call,
    cause: i64,
    source: HangupSource,
    now: Timestamp,
) -> Result<Option<Call>, DbError> {
    let Some(mut ended) = calls::end(c, call.id, cause, source, now)? else {
        return Ok(None);
    };
    timeline(
        c,
        call.id,
        "hangup",
        &json!({"cause": cause, "source": source}),
        now,
    )?;
    let minutes = billed_seconds(&ended) / 60;
    if minutes > 0 {
        // Inbound legs are billed at the rate of the platform number called, outbound legs
        // at the rate of the target: both are the callee.
        if let Some(rate) = rates::lookup(c, &ended.callee)? {
            let price = rate
                .call_price_per_minute
                .checked_mul(minutes)
                .unwrap_or(Money::ZERO);
            if price > Money::ZERO {
                billing::debit_usage(c, ended.account_id, price, "call", &ended.callid, now)?;
                calls::set_debit(c, ended.id, price)?;
                ended.billing_debit = price;
            }
        }
    }
    let data = legacy_cdr(c, &ended)?;
    emit(
        c,
        ended.account_id,
        &event(ended.direction, "hangup"),
        &data,
        now,
    )?;
    Ok(Some(ended))
}
