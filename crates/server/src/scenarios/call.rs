//! Calls on the simulated network: an inbound call to a platform number runs the attached
//! scenario; its DTMF, audio and hangup feed the run; every leg ends with a CDR, a
//! `call.*_hangup` event and a per-started-minute debit.

use dialtone_domain::sms::Sender;
use dialtone_domain::{E164, Money, Timestamp};
use dialtone_store::calls::{self, Call, NewCall, NewRecording};
use dialtone_store::runs::{self, NewRun, Run};
use dialtone_store::{Conn, accounts, billing, rates, scenarios};
use serde_json::{Value, json};

use super::driver::{Stored, Trigger, emit};
use super::pending::{self, Pending};
use crate::http::error::ApiError;
use crate::state::AppState;

/// Q.850 cause of a normal hangup.
pub const NORMAL_CLEARING: i64 = 16;
/// Q.850 cause of a call to a number with no scenario.
pub const UNALLOCATED_NUMBER: i64 = 1;

/// The call as scenario expressions see it (`call`), with its CDR so far.
pub fn call_object(k: &Call) -> Value {
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

fn seconds(from: Option<Timestamp>, to: Option<Timestamp>) -> i64 {
    match (from, to) {
        (Some(a), Some(b)) => ((b.millis() - a.millis()).max(0) + 999) / 1000,
        _ => 0,
    }
}

/// Billed seconds: per started minute of answered time.
pub fn billed_seconds(k: &Call) -> i64 {
    let answered = seconds(k.answered, k.ended);
    (answered + 59) / 60 * 60
}

/// The call detail record of v2.0: the fields of the export and of sandbox call views.
pub fn cdr(k: &Call) -> Value {
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
pub fn legacy_cdr(c: &mut dyn Conn, k: &Call) -> Result<Value, ApiError> {
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
        "hangupsource": k.hangup_source.as_deref().map(str::to_ascii_uppercase),
        "hangupcause": k.hangup_cause,
        "duration": seconds(Some(k.started), k.ended),
        "duration_answered": seconds(k.answered, k.ended),
        "duration_billed": if k.ended.is_some() { billed_seconds(k) } else { 0 },
        "scenario_hash": scenario.as_ref().map_or(String::new(), |s| s.sid.to_hash()),
        "scenario_name": scenario.as_ref().map_or("", |s| s.name.as_str()),
        "b_customer_debit": k.billing_debit.to_cents_string(),
    });
    if k.direction == "inbound" {
        cdr["did_intl_number"] = json!(k.callee);
    } else {
        let parent = match k.parent_id {
            Some(id) => calls::by_id(c, id)?.map(|p| p.callid),
            None => None,
        };
        let dialstatus = match (k.answered, k.ended, k.hangup_cause) {
            (Some(_), _, _) => "ANSWER",
            (None, None, _) => "RINGING",
            (None, Some(_), Some(17)) => "BUSY",
            (None, Some(_), Some(19)) => "NOANSWER",
            (None, Some(_), _) => "FAILED",
        };
        cdr["number"] = json!(k.callee);
        cdr["dialstatus"] = json!(dialstatus);
        cdr["callid_in"] = json!(parent);
    }
    Ok(cdr)
}

/// What a sandbox call to a platform number did.
#[derive(Debug)]
pub struct Placed {
    /// The call.
    pub call: Call,
    /// The run it started, if a scenario is attached.
    pub run: Option<i64>,
}

/// Places a call from `from` to the platform number `to`: declined with an
/// unallocated-number message when no scenario is attached, else it rings, is answered
/// (unless `autoAnswer: false`) and the scenario's `inbound-call` branch runs.
pub async fn place_inbound(
    state: &AppState,
    caller_account: i64,
    from: &str,
    to: &str,
) -> Result<Placed, ApiError> {
    let (from, to) = (from.to_owned(), to.to_owned());
    let now = state.clock.now();
    let lease = now.plus_ms(30_000);
    let max_running = state.config.quota_running_runs;
    let placed = state
        .store
        .write(move |c| {
            let number = dialtone_store::numbers::owned::by_e164(c, &to)?
                .ok_or_else(|| ApiError::not_found("number"))?;
            let Some(account_id) = number.account_id else {
                // A free platform number: the line that records audio files by phone.
                let call = calls::create(
                    c,
                    &NewCall {
                        account_id: caller_account,
                        direction: "inbound",
                        caller: &from,
                        callee: &to,
                        number: None,
                        scenario_sid: None,
                        parent_id: None,
                    },
                    now,
                )?;
                calls::answer(c, call.id, now)?;
                calls::log(c, call.id, "answered", "{}", now)?;
                let prompt =
                    json!({"what": "Enter your recording code, then speak after the tone"});
                calls::log(c, call.id, "say", &prompt.to_string(), now)?;
                let call = calls::by_id(c, call.id)?.unwrap_or(call);
                return Ok(Placed { call, run: None });
            };
            if account_id != caller_account {
                return Err(ApiError::not_found("number"));
            }
            let scenario = scenarios::attached_to(c, &to)?;
            let call = calls::create(
                c,
                &NewCall {
                    account_id,
                    direction: "inbound",
                    caller: &from,
                    callee: &to,
                    number: Some(&to),
                    scenario_sid: scenario.as_ref().map(|s| s.sid.as_str()),
                    parent_id: None,
                },
                now,
            )?;
            calls::log(c, call.id, "ringing", "{}", now)?;
            let data = legacy_cdr(c, &call)?;
            emit(c, account_id, "call.inbound_start", &data, now)?;
            let Some(scenario) = scenario else {
                calls::log(
                    c,
                    call.id,
                    "declined",
                    &json!({"message": "the number you have called is not allocated"}).to_string(),
                    now,
                )?;
                let ended = end_leg(c, &call, UNALLOCATED_NUMBER, "system", now)?;
                return Ok(Placed {
                    call: ended.unwrap_or(call),
                    run: None,
                });
            };
            // The interpreter answers (autoAnswer) as its first command.
            let run = new_run(
                c,
                max_running,
                account_id,
                &scenario,
                "inbound-call",
                Some(&call),
                None,
                serde_json::Map::new(),
                lease,
                now,
            )?;
            Ok::<_, ApiError>(Placed {
                call,
                run: Some(run.id),
            })
        })
        .await?;
    if let Some(run) = placed.run {
        super::driver::drive(state.clone(), run, vec![Trigger::Start])
            .await
            .map_err(ApiError::internal)?;
    }
    Ok(placed)
}

/// Creates a run (not started: its start is stored, leased until `lease`), within the
/// account's quota of runs running at once (`max_running`).
#[allow(clippy::too_many_arguments)]
pub fn new_run(
    c: &mut dyn Conn,
    max_running: i64,
    account_id: i64,
    scenario: &scenarios::Scenario,
    kind: &str,
    call: Option<&Call>,
    sms: Option<Value>,
    input: serde_json::Map<String, Value>,
    lease: Timestamp,
    now: Timestamp,
) -> Result<Run, ApiError> {
    let branch = match kind {
        "api" => "api-initiated",
        other => other,
    };
    let running = c
        .query_one(
            "SELECT count(*) FROM runs WHERE account_id = $1 AND status = 'running'",
            dialtone_store::params![account_id],
        )?
        .int(0)?;
    if running >= max_running {
        return Err(ApiError::forbidden(
            "quota_exceeded",
            format!("the account has {running} runs running: the limit is {max_running}"),
        ));
    }
    let run = runs::create(
        c,
        &NewRun {
            account_id,
            scenario_sid: scenario.sid.as_str(),
            scenario_name: &scenario.name,
            script: &scenario.script,
            kind,
            call_id: call.map(|k| k.id),
        },
        now,
    )?;
    let context = dialtone_actions::Context {
        now: now.to_rfc3339(),
        run: json!({"id": run.sid.as_str(), "type": kind}),
        scenario: json!({"sid": scenario.sid.as_str(), "name": scenario.name}),
        call: call.map(call_object),
        sms,
        input,
    };
    let stored = Stored::Start {
        branch: branch.to_owned(),
        context,
    };
    let text = serde_json::to_string(&stored).map_err(ApiError::internal)?;
    runs::set_start(c, run.id, &text, lease)?;
    Ok(runs::by_id(c, run.id)?.unwrap_or(run))
}

/// Opens an outbound leg dialled from `parent` and answers it at once (simulated callee).
pub fn open_leg(
    c: &mut dyn Conn,
    run: &Run,
    parent: &Call,
    caller: &str,
    target: &str,
    now: Timestamp,
) -> Result<Call, ApiError> {
    let leg = calls::create(
        c,
        &NewCall {
            account_id: run.account_id,
            direction: "outbound",
            caller,
            callee: target,
            number: parent.number.as_deref(),
            scenario_sid: Some(&run.scenario_sid),
            parent_id: Some(parent.id),
        },
        now,
    )?;
    let data = legacy_cdr(c, &leg)?;
    emit(c, run.account_id, "call.outbound_start", &data, now)?;
    calls::answer(c, leg.id, now)?;
    calls::log(
        c,
        parent.id,
        "connected",
        &json!({"target": target, "callid": leg.callid}).to_string(),
        now,
    )?;
    Ok(calls::by_id(c, leg.id)?.unwrap_or(leg))
}

/// Stores a recording of `call` from `started` to `end` (ms) with the audio the caller sent,
/// or silence of that length; emits `media.recording.new` (the earlier Media.Recording
/// shape); returns the v2.0 recording object.
#[allow(clippy::too_many_arguments)]
pub fn record(
    c: &mut dyn Conn,
    run: &Run,
    call: &Call,
    kind: &str,
    started: i64,
    end: i64,
    audio: Option<Vec<u8>>,
    now: Timestamp,
) -> Result<Value, ApiError> {
    let (wav, duration_ms) = match audio {
        Some(wav) => {
            let ms = dialtone_media::wav_info(&wav).map_or(0, |(_, _, ms)| ms);
            (wav, ms)
        }
        None => {
            let ms = u64::try_from((end - started).max(0)).unwrap_or(0);
            (dialtone_media::silence_wav(ms), ms)
        }
    };
    let duration = i64::try_from(duration_ms.div_ceil(1000)).unwrap_or(0);
    let sid = calls::create_recording(
        c,
        &NewRecording {
            account_id: run.account_id,
            kind,
            caller: &call.caller,
            callee: &call.callee,
            callid: &call.callid,
            duration,
            audio: &wav,
        },
        now,
    )?;
    let object = json!({
        "sid": sid.as_str(),
        "type": kind,
        "caller": call.caller,
        "callee": call.callee,
        "callid": call.callid,
        "duration": duration,
        "read": false,
        "readAt": null,
        "transcript": null,
        "created": now.to_rfc3339(),
    });
    let legacy = json!({
        "hash": sid.to_hash(),
        "type": kind.to_ascii_uppercase(),
        "callid": call.callid,
        "caller": call.caller,
        "callee": call.callee,
        "duration": duration,
        "status": "READY",
    });
    emit(c, run.account_id, "media.recording.new", &legacy, now)?;
    calls::log(
        c,
        call.id,
        "recorded",
        &json!({"recording": sid.as_str(), "type": kind, "duration": duration}).to_string(),
        now,
    )?;
    Ok(object)
}

/// Ends one leg: stores the hangup, debits its minutes, emits `call.*_hangup`. None when it
/// had already ended.
fn end_leg(
    c: &mut dyn Conn,
    call: &Call,
    cause: i64,
    source: &str,
    now: Timestamp,
) -> Result<Option<Call>, ApiError> {
    let Some(mut ended) = calls::end(c, call.id, cause, source, now)? else {
        return Ok(None);
    };
    calls::log(
        c,
        call.id,
        "hangup",
        &json!({"cause": cause, "source": source}).to_string(),
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
    let kind = if ended.direction == "inbound" {
        "call.inbound_hangup"
    } else {
        "call.outbound_hangup"
    };
    let data = legacy_cdr(c, &ended)?;
    emit(c, ended.account_id, kind, &data, now)?;
    Ok(Some(ended))
}

/// Hangs a call up (and its dialled legs), finishes what its runs waited for on it, and says
/// which triggers each of its runs must now receive. Empty when it had already ended.
pub async fn hang_up(
    state: &AppState,
    call_id: i64,
    cause: i64,
    source: &str,
) -> anyhow::Result<Vec<(i64, Vec<Trigger>)>> {
    let now = state.clock.now();
    let source = source.to_owned();
    let parsed = state.parsed.clone();
    let result = state
        .store
        .write(move |c| {
            let Some(call) = calls::by_id(c, call_id)? else {
                return Ok(Vec::new());
            };
            let Some(ended) = end_leg(c, &call, cause, &source, now)? else {
                return Ok(Vec::new());
            };
            let mut out = Vec::new();
            for run in runs::live_for_call(c, call_id)? {
                let mut triggers = Vec::new();
                for wait in pending::parse(&run.pending) {
                    match wait {
                        Pending::CallRecording { fiber, started } => {
                            let audio = calls::audio(c, call_id)?;
                            let rec =
                                record(c, &run, &ended, "call", started, now.millis(), audio, now)?;
                            triggers.push(Trigger::Event(dialtone_actions::Event::ActionEvent {
                                fiber,
                                name: "ready".into(),
                                value: rec,
                            }));
                        }
                        Pending::Dial { fiber, target, leg } => {
                            if let Some(leg) = calls::by_id(c, leg)? {
                                end_leg(c, &leg, NORMAL_CLEARING, &source, now)?;
                            }
                            triggers.push(Trigger::Event(dialtone_actions::Event::Result {
                                fiber,
                                value: json!({"ok": true, "status": "answered", "target": target}),
                            }));
                        }
                        _ => {}
                    }
                }
                // Waits answered by the end of the call (record) are settled by Poll.
                triggers.push(Trigger::Poll);
                triggers.push(Trigger::Event(dialtone_actions::Event::CallEnded));
                if run.kind == "inbound-call"
                    && parsed
                        .get(&run.script)
                        .map(|s| s.has_branch("hangup"))
                        .unwrap_or(false)
                {
                    triggers.push(Trigger::Branch("hangup".into()));
                }
                out.push((run.id, triggers));
            }
            Ok::<_, ApiError>(out)
        })
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    state.wake.notify_one();
    Ok(result)
}

/// Hangs up a live call and drives its runs to the end of the call.
pub async fn hang_up_and_drive(
    state: &AppState,
    call_id: i64,
    cause: i64,
    source: &str,
) -> anyhow::Result<()> {
    for (run, triggers) in hang_up(state, call_id, cause, source).await? {
        super::driver::drive(state.clone(), run, triggers).await?;
    }
    Ok(())
}

/// Feeds the runs of a call after the caller sent digits or audio.
pub async fn poll_runs(state: &AppState, call_id: i64) -> anyhow::Result<()> {
    let live = state
        .store
        .read(move |c| runs::live_for_call(c, call_id))
        .await?;
    for run in live {
        super::driver::drive(state.clone(), run.id, vec![Trigger::Poll]).await?;
    }
    Ok(())
}

/// `sms@v1`: sends through the same path as `POST /sms`; `{ok, sids}`.
pub async fn send_sms(
    state: &AppState,
    run: &Run,
    to: Vec<String>,
    body: String,
    from: Option<String>,
) -> Value {
    let account_id = run.account_id;
    let account = match state
        .store
        .read(move |c| accounts::by_id(c, account_id))
        .await
    {
        Ok(Some(a)) => a,
        _ => return json!({"ok": false, "sids": [], "error": "account not found"}),
    };
    let sender = match Sender::parse(from.as_deref().unwrap_or_default()) {
        Ok(s) => s,
        Err(e) => return json!({"ok": false, "sids": [], "error": e}),
    };
    let mut sids = Vec::new();
    let mut errors = Vec::new();
    for number in to {
        let Ok(to) = E164::parse(&number) else {
            errors.push(format!("{number}: not a valid E.164 number"));
            continue;
        };
        let out = crate::sms::Outgoing {
            to,
            from: sender.clone(),
            body: body.clone(),
            encoding: None,
            traffic_type: dialtone_domain::sms::TrafficType::Alerting,
            user_data: None,
            flash: false,
            webhook_url: None,
            replace_stopnum: false,
        };
        match crate::sms::send(state, &account, out).await {
            Ok(sms) => sids.push(sms.sid.to_string()),
            Err(e) => errors.push(format!("{number}: {}", e.message)),
        }
    }
    let mut value = json!({"ok": errors.is_empty(), "sids": sids});
    if !errors.is_empty() {
        value["error"] = json!(errors.join("; "));
    }
    value
}

/// Starts the `inbound-sms` branch of the scenario attached to `to`, inside the transaction
/// that stores the inbound SMS; the worker runs it once committed.
pub fn start_inbound_sms(
    c: &mut dyn Conn,
    account_id: i64,
    to: &str,
    sms: Value,
    now: Timestamp,
    parsed: &super::ParsedCache,
    max_running: i64,
) -> Result<Option<i64>, ApiError> {
    let Some(scenario) = scenarios::attached_to(c, to)? else {
        return Ok(None);
    };
    if !parsed
        .get(&scenario.script)
        .map(|s| s.has_branch("inbound-sms"))
        .unwrap_or(false)
    {
        return Ok(None);
    }
    let run = new_run(
        c,
        max_running,
        account_id,
        &scenario,
        "inbound-sms",
        None,
        Some(sms),
        serde_json::Map::new(),
        now,
        now,
    );
    match run {
        Ok(run) => Ok(Some(run.id)),
        // The SMS is received all the same; only its run is not started.
        Err(e) if e.code == "quota_exceeded" => {
            tracing::warn!(account_id, reason = %e.message, "inbound-sms run not started");
            Ok(None)
        }
        Err(e) => Err(e),
    }
}
