//! A call to a platform number: declined with an unallocated-number message when no
//! scenario is attached, else it rings and the scenario's `inbound-call` branch runs (which
//! answers it, unless `autoAnswer: false`). A free platform number is the line that records
//! audio files by phone.

use dialtone_domain::call::{CallDirection, HangupSource, UNALLOCATED_NUMBER};
use dialtone_domain::run::RunKind;
use dialtone_store::calls::{self, Call, NewCall};
use dialtone_store::scenarios;
use serde_json::json;

use super::driver::drive;
use super::runs::{self, RunStart};
use super::stored::Trigger;
use crate::error::AppError;
use crate::state::AppState;
use crate::voice::cdr::legacy_cdr;
use crate::voice::legs::{self, emit, timeline};

/// What a call to a platform number did.
#[derive(Debug)]
pub(crate) struct Placed {
    /// The call.
    pub call: Call,
    /// The run it started, if a scenario is attached.
    pub run: Option<i64>,
}

/// A call from `from` to the platform number `to`, on `network`, placed by (or for) the
/// account `caller_account`.
#[derive(Debug, Clone)]
pub(crate) struct Inbound {
    /// The account placing it (the sandbox) or owning the number (a real network).
    pub caller_account: i64,
    /// Calling number.
    pub from: String,
    /// The platform number called.
    pub to: String,
    /// The network it arrives on.
    pub network: String,
}

/// Receives a call to a platform number and drives its run to its first wait.
pub(crate) async fn place(state: &AppState, inbound: Inbound) -> Result<Placed, AppError> {
    let placed = admit(state, inbound).await?;
    if let Some(run) = placed.run {
        drive(state.clone(), run, vec![Trigger::Due])
            .await
            .map_err(AppError::internal)?;
    }
    Ok(placed)
}

/// Receives a call to a platform number: records it (ringing, or declined) and its run,
/// without driving the run (a network that must first carry the call under its id drives
/// it after).
pub(crate) async fn admit(state: &AppState, inbound: Inbound) -> Result<Placed, AppError> {
    let now = state.clock.now();
    let lease = now.plus_ms(30_000);
    let max_running = state.config.quota_running_runs;
    let placed = state
        .store
        .write(move |c| {
            let Inbound {
                caller_account,
                from,
                to,
                network,
            } = &inbound;
            let number = dialtone_store::numbers::owned::by_e164(c, to)?
                .ok_or_else(|| AppError::not_found("number"))?;
            let Some(account_id) = number.account_id else {
                // A free platform number: the line that records audio files by phone.
                let call = calls::create(
                    c,
                    &NewCall {
                        account_id: *caller_account,
                        direction: CallDirection::Inbound,
                        caller: from,
                        callee: to,
                        number: None,
                        scenario_sid: None,
                        parent_id: None,
                        network,
                        callid: None,
                    },
                    now,
                )?;
                legs::answer(c, &call, &json!({}), now)?;
                let prompt =
                    json!({"what": "Enter your recording code, then speak after the tone"});
                timeline(c, call.id, "say", &prompt, now)?;
                let call = calls::by_id(c, call.id)?.unwrap_or(call);
                return Ok(Placed { call, run: None });
            };
            if account_id != *caller_account {
                return Err(AppError::not_found("number"));
            }
            let scenario = scenarios::attached_to(c, to)?;
            let call = calls::create(
                c,
                &NewCall {
                    account_id,
                    direction: CallDirection::Inbound,
                    caller: from,
                    callee: to,
                    number: Some(to),
                    scenario_sid: scenario.as_ref().map(|s| s.sid.as_str()),
                    parent_id: None,
                    network,
                    callid: None,
                },
                now,
            )?;
            timeline(c, call.id, "ringing", &json!({}), now)?;
            let data = legacy_cdr(c, &call)?;
            emit(c, account_id, "call.inbound_start", &data, now)?;
            let Some(scenario) = scenario else {
                let message = json!({"message": "the number you have called is not allocated"});
                timeline(c, call.id, "declined", &message, now)?;
                let ended = legs::end(c, &call, UNALLOCATED_NUMBER, HangupSource::System, now)?;
                return Ok(Placed {
                    call: ended.unwrap_or(call),
                    run: None,
                });
            };
            // The interpreter answers (autoAnswer) as its first command.
            let run = runs::create(
                c,
                RunStart {
                    max_running,
                    account_id,
                    scenario: &scenario,
                    kind: RunKind::InboundCall,
                    call: Some(&call),
                    sms: None,
                    input: serde_json::Map::new(),
                    lease,
                },
                now,
            )?;
            Ok::<_, AppError>(Placed {
                call,
                run: Some(run.id),
            })
        })
        .await?;
    Ok(placed)
}
