//! What each command of a step does. Adding an action means handling its command in
//! [`apply`] (and, if it waits, its [`Pending`] in `settle.rs` and
//! [`Pending::deadline`]): the matches have no wildcard arm, so a command or a wait not
//! handled everywhere does not compile. Prompts, gathers and recordings are in
//! `prompts.rs`, dials in `dialing.rs`.
//!
//! [`apply`] and `settle` run inside the transaction that saves the step (call records,
//! waits); what reaches outside (networks, SMS, HTTP) is returned as [`Io`] and done by
//! [`perform`] once the step is committed.

use dialtone_actions::{Command, CommandKind, Event};
use dialtone_carrier::voice::{CallAction, DialOutcome};
use dialtone_store::calls::{self, Call};
use dialtone_store::runs::Run;
use dialtone_store::{Conn, DbError};
use serde_json::{Value, json};

use super::dialing;
use super::pending::Pending;
use super::prompts::{self, Gather, PromptKind};
pub(crate) use super::scope::{CommitOutput, Io, Scope};
use crate::state::AppState;
use crate::voice::legs::{self, timeline};

/// The leg the run's call is bridged to, if a dial connected.
fn connected_leg(waits: &[Pending]) -> Option<i64> {
    waits.iter().find_map(|w| match w {
        Pending::Dial { leg, .. } => Some(*leg),
        _ => None,
    })
}

/// Applies one command: call records now, waits recorded, outside work queued.
pub(crate) fn apply(c: &mut dyn Conn, s: &mut Scope<'_>, command: &Command) -> Result<(), DbError> {
    let live = s.call.as_ref().filter(|k| k.status.is_live()).cloned();
    match &command.kind {
        CommandKind::SendSms { .. } | CommandKind::Fetch { .. } | CommandKind::Wait { .. } => {
            apply_outside_call(s, command);
        }
        kind @ (CommandKind::Hangup
        | CommandKind::Answer
        | CommandKind::Ringing
        | CommandKind::Say { .. }
        | CommandKind::Play { .. }
        | CommandKind::Gather { .. }
        | CommandKind::Record { .. }
        | CommandKind::StartRecording { .. }
        | CommandKind::Bridge
        | CommandKind::Dial { .. }) => match live {
            Some(k) => apply_on_call(c, s, &k, command)?,
            None => {
                // A call action in a run without a live call: it does nothing and says so.
                let name = serde_json::to_value(kind)
                    .ok()
                    .and_then(|v| v.get("type").and_then(Value::as_str).map(str::to_owned))
                    .unwrap_or_default();
                let error = format!("{name}: the run has no live call");
                s.done(command.fiber, json!({"ok": false, "error": error}));
            }
        },
    }
    Ok(())
}

/// The commands that need no call: outside work and timers.
fn apply_outside_call(s: &mut Scope<'_>, command: &Command) {
    let fiber = command.fiber;
    match &command.kind {
        CommandKind::SendSms { to, body, from } => s.out.io.push(Io::Sms {
            fiber,
            to: to.clone(),
            body: body.clone(),
            from: from.clone(),
        }),
        CommandKind::Fetch {
            url,
            method,
            headers,
            body,
            timeout_ms,
            version: _,
        } => s.out.io.push(Io::Fetch {
            fiber,
            url: url.clone(),
            method: method.clone(),
            headers: headers.clone(),
            body: body.clone(),
            timeout_ms: *timeout_ms,
        }),
        CommandKind::Wait { seconds } => {
            let ms = (seconds * 1000.0).clamp(0.0, 86_400_000.0) as i64;
            s.waits.push(Pending::Wait {
                fiber,
                deadline: s.now.millis() + ms,
            });
        }
        // Call commands: `apply_on_call`.
        CommandKind::Hangup
        | CommandKind::Answer
        | CommandKind::Ringing
        | CommandKind::Say { .. }
        | CommandKind::Play { .. }
        | CommandKind::Gather { .. }
        | CommandKind::Record { .. }
        | CommandKind::StartRecording { .. }
        | CommandKind::Bridge
        | CommandKind::Dial { .. } => {}
    }
}

/// The commands on the run's live call `k`.
fn apply_on_call(
    c: &mut dyn Conn,
    s: &mut Scope<'_>,
    k: &Call,
    command: &Command,
) -> Result<(), DbError> {
    let fiber = command.fiber;
    match &command.kind {
        CommandKind::Hangup => {
            timeline(c, k.id, "hangup", &json!({"source": "scenario"}), s.now)?;
            s.out.hang_up = Some(k.id);
            s.done(fiber, Value::Null);
        }
        CommandKind::Answer => {
            if legs::answer(c, k, &json!({}), s.now)? {
                *s.call = calls::by_id(c, k.id)?;
                s.act(k, CallAction::Answer);
            }
            s.done(fiber, Value::Null);
        }
        CommandKind::Ringing => {
            timeline(c, k.id, "ringing", &json!({}), s.now)?;
            s.act(k, CallAction::Ringing);
            s.done(fiber, Value::Null);
        }
        CommandKind::Say { what, language } => {
            let what = PromptKind::Say {
                what,
                language: language.as_deref(),
            };
            prompts::prompt(c, s, k, fiber, what)?;
        }
        CommandKind::Play { media } => {
            prompts::prompt(c, s, k, fiber, PromptKind::Play { media })?;
        }
        CommandKind::Gather {
            max_digits,
            min_digits,
            timeout_secs,
            finish_on_key,
            prompt,
        } => {
            let gather = Gather {
                max_digits: *max_digits,
                min_digits: *min_digits,
                timeout_secs: *timeout_secs,
                finish_on_key: finish_on_key.clone(),
                prompt: prompt.clone(),
            };
            prompts::collect(c, s, k, fiber, gather)?;
        }
        CommandKind::Record {
            max_duration_secs,
            finish_on_key,
            transcription,
        } => {
            let voicemail = prompts::Voicemail {
                max_duration_secs: *max_duration_secs,
                finish_on_key: finish_on_key.clone(),
                transcription: transcription.clone(),
            };
            prompts::record(c, s, k, fiber, voicemail)?;
        }
        CommandKind::StartRecording { transcription } => {
            let data = json!({"transcription": transcription});
            timeline(c, k.id, "startRecording", &data, s.now)?;
            s.act(k, CallAction::StartRecording);
            let started = s.now.millis();
            s.waits.push(Pending::CallRecording {
                fiber,
                started,
                transcription: transcription.clone(),
            });
            s.done(fiber, json!({"ok": true}));
        }
        CommandKind::Bridge => {
            timeline(c, k.id, "bridge", &json!({}), s.now)?;
            if let Some(leg) = connected_leg(s.waits)
                && let Some(leg) = calls::by_id(c, leg)?
            {
                s.act(k, CallAction::Bridge { with: leg.callid });
            }
            s.waits.push(Pending::Bridge { fiber });
        }
        CommandKind::Dial {
            targets,
            answer_on_branch,
            from,
        } => {
            let from = from.clone().unwrap_or_else(|| k.callee.clone());
            dialing::dial(s, k, fiber, targets, answer_on_branch.is_some(), from);
        }
        // Not call commands: `apply_outside_call`.
        CommandKind::SendSms { .. } | CommandKind::Fetch { .. } | CommandKind::Wait { .. } => {}
    }
    Ok(())
}

/// Performs a committed step's outside work; gives the event its fiber receives, if any
/// (a dial's outcome comes back as a trigger of its own).
pub(crate) async fn perform(state: &AppState, run: &Run, io: Io) -> Option<super::stored::Trigger> {
    use super::stored::Trigger;
    match io {
        Io::Sms {
            fiber,
            to,
            body,
            from,
        } => {
            let value = super::sms_action::send(state, run, to, body, from).await;
            Some(Trigger::Event(Event::Result { fiber, value }))
        }
        Io::Fetch {
            fiber,
            url,
            method,
            headers,
            body,
            timeout_ms,
        } => {
            let value = super::fetch::fetch(state, &url, &method, &headers, body, timeout_ms).await;
            Some(Trigger::Event(Event::Result { fiber, value }))
        }
        Io::Dial { fiber, dial } => {
            let (outcome, network) = match state.networks.voice_for(&dial.to) {
                Some(network) => (network.dial(&dial).await, network.name().to_owned()),
                None => (DialOutcome::Failed, String::new()),
            };
            Some(Trigger::Dialed {
                fiber,
                outcome,
                network,
                callid: dial.callid,
            })
        }
        Io::Act {
            callid,
            network,
            action,
        } => {
            let result = match state.networks.voice(&network) {
                Some(n) => n.act(&callid, &action).await,
                None => Err(dialtone_carrier::voice::VoiceError {
                    network: network.clone(),
                    reason: "no such network on this node".into(),
                }),
            };
            if let Err(e) = result {
                tracing::warn!(run = %run.sid, callid, action = action.name(), error = %e, "a call action failed");
            }
            None
        }
    }
}
