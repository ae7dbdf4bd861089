//! The end of a call: its leg and its dialled legs end (records, debits, events), the
//! networks are told, and each run on the call learns it: its call recording is made, its
//! dial answers, its `hangup` branch starts. A leg dialled from another call that ends by
//! itself tells the runs of that call, whose dial is then over.
//!
//! A network that carries media is told first, before the records are written: it stops
//! the call's media and delivers what it recorded, which the call recording then holds.

use dialtone_actions::Event;
use dialtone_carrier::voice::CallAction;
use dialtone_domain::Timestamp;
use dialtone_domain::call::{HangupSource, NORMAL_CLEARING, RecordingKind};
use dialtone_domain::run::RunKind;
use dialtone_store::calls::{self, Call};
use dialtone_store::runs::{self, Run};
use dialtone_store::{Conn, DbError};
use serde_json::json;

use super::pending::{self, Pending};
use super::stored::Trigger;
use crate::state::AppState;
use crate::voice::legs;
use crate::voice::recordings::{self, Recorded};

/// The triggers each run of an ended call must now receive, by run.
pub(crate) type RunTriggers = Vec<(i64, Vec<Trigger>)>;

/// Hangs a call up (and its dialled legs), finishes what its runs waited for on it, tells
/// the networks carrying the legs, and says which triggers each of its runs must now
/// receive. Empty when it had already ended.
pub(crate) async fn hang_up(
    state: &AppState,
    call_id: i64,
    cause: i64,
    source: HangupSource,
) -> anyhow::Result<RunTriggers> {
    tell_media_network(state, call_id, cause).await;
    let now = state.clock.now();
    let parsed = state.parsed.clone();
    let (result, ended_legs) = state
        .store
        .write(move |c| {
            let mut ended_legs = Vec::new();
            let Some(call) = calls::by_id(c, call_id)? else {
                return Ok((Vec::new(), ended_legs));
            };
            let Some(ended) = legs::end(c, &call, cause, source, now)? else {
                return Ok((Vec::new(), ended_legs));
            };
            ended_legs.push((ended.callid.clone(), ended.network.clone(), cause));
            let mut out = Vec::new();
            for run in runs::live_for_call(c, call_id)? {
                let hangup_branch = run.kind == RunKind::InboundCall
                    && parsed
                        .get(&run.script)
                        .map(|s| s.has_branch("hangup"))
                        .unwrap_or(false);
                let ending = Ending {
                    call: &ended,
                    source,
                    now,
                };
                let triggers = triggers_of(c, &run, &ending, hangup_branch, &mut ended_legs)?;
                out.push((run.id, triggers));
            }
            // The call recordings hold the call's audio now.
            calls::set_call_audio(c, call_id, None)?;
            // A dialled leg that ended by itself: the runs of the call it was dialled from.
            if let Some(parent) = ended.parent_id {
                for run in runs::live_for_call(c, parent)? {
                    out.push((run.id, vec![Trigger::LegEnded { leg: call_id }]));
                }
            }
            Ok::<_, dialtone_store::DbError>((out, ended_legs))
        })
        .await?;
    state.wake.notify_one();
    // A hangup the far end reported needs no BYE back; the networks ignore an action on a
    // leg they no longer carry (the main leg of a media network was told already).
    for (callid, network, cause) in ended_legs {
        if let Some(n) = state.networks.voice(&network) {
            let action = CallAction::HangUp { cause };
            if let Err(e) = n.act(&callid, &action).await {
                tracing::warn!(callid, error = %e, "a network could not end a leg");
            }
        }
    }
    Ok(result)
}

/// The call that ended, how and when.
struct Ending<'a> {
    call: &'a Call,
    source: HangupSource,
    now: Timestamp,
}

/// What a run of the ended call must now receive: its call recording made (its `ready`,
/// unless a transcript is awaited), its dial answered (the dialled leg ended, into
/// `ended_legs`), its waits polled, the end of the call, its `hangup` branch.
fn triggers_of(
    c: &mut dyn Conn,
    run: &Run,
    e: &Ending<'_>,
    hangup_branch: bool,
    ended_legs: &mut Vec<(String, String, i64)>,
) -> Result<Vec<Trigger>, DbError> {
    let mut triggers = Vec::new();
    // A run whose waits do not read back is failed by its next drive.
    let waits = pending::parse(&run.pending).unwrap_or_default();
    for wait in waits {
        match wait {
            Pending::CallRecording {
                fiber,
                started,
                transcription,
            } => {
                // With a transcription to make, `ready` waits for it: the
                // workers send it (see `voice/transcriptions.rs`).
                let waits = transcription
                    .as_deref()
                    .is_some_and(|l| crate::speech::transcribe::model_language(l).is_ok());
                let recorded = Recorded {
                    kind: RecordingKind::Call,
                    started,
                    end: e.now.millis(),
                    audio: calls::call_audio(c, e.call.id)?,
                    transcription: transcription.map(|l| (l, waits.then_some((run.id, fiber)))),
                };
                let rec = recordings::store(c, e.call, recorded, e.now)?;
                if !waits {
                    triggers.push(Trigger::Event(Event::ActionEvent {
                        fiber,
                        name: "ready".into(),
                        value: rec,
                    }));
                }
            }
            Pending::Dial { fiber, target, leg } => {
                if let Some(leg) = calls::by_id(c, leg)?
                    && let Some(leg) = legs::end(c, &leg, NORMAL_CLEARING, e.source, e.now)?
                {
                    ended_legs.push((leg.callid, leg.network, NORMAL_CLEARING));
                }
                triggers.push(Trigger::Event(Event::Result {
                    fiber,
                    value: json!({"ok": true, "status": "answered", "target": target}),
                }));
            }
            Pending::Dialing { fiber, .. } => {
                triggers.push(Trigger::Event(Event::Result {
                    fiber,
                    value: json!({"ok": false, "status": "failed", "target": null}),
                }));
            }
            // Settled by the poll below (a recording ends with the call), or by
            // the end of the call itself.
            Pending::Gather { .. }
            | Pending::Playing { .. }
            | Pending::Record { .. }
            | Pending::Wait { .. }
            | Pending::Bridge { .. }
            | Pending::Answer { .. } => {}
        }
    }
    // Waits answered by the end of the call (record) are settled by Poll.
    triggers.push(Trigger::Poll);
    triggers.push(Trigger::Event(Event::CallEnded));
    if hangup_branch {
        triggers.push(Trigger::Branch("hangup".into()));
    }
    Ok(triggers)
}

/// Hangs up a live call on a network that carries media before its records are written,
/// so that what the network recorded reaches the call first.
async fn tell_media_network(state: &AppState, call_id: i64, cause: i64) {
    let Ok(Some(call)) = state.store.read(move |c| calls::by_id(c, call_id)).await else {
        return;
    };
    if !call.status.is_live() {
        return;
    }
    let Some(network) = state.networks.voice(&call.network) else {
        return;
    };
    if !network.carries_media() {
        return;
    }
    if let Err(e) = network
        .act(&call.callid, &CallAction::HangUp { cause })
        .await
    {
        tracing::warn!(callid = %call.callid, error = %e, "a network could not end a call");
    }
}
