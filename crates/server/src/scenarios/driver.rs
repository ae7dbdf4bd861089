//! Drives one run: feeds triggers to the interpreter, commits each step (state, log, call
//! effects, what it now waits for) with an optimistic version check, then performs the
//! step's outside work (SMS, HTTP) and feeds the results back, until the run waits or ends.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;

use dialtone_actions::{
    Command, CommandKind, Context, Event, Limits, Outcome, RunState, Step, resume, start,
    start_branch,
};
use dialtone_domain::Timestamp;
use dialtone_store::calls::{self, Call};
use dialtone_store::runs::{self, Progress, Run};
use dialtone_store::{Conn, events};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::pending::{self, Pending};
use crate::http::error::ApiError;
use crate::state::AppState;

/// What a run's `state` column holds: the start it was asked for, or the interpreter state.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Stored {
    /// Not started yet (a node that dies before the first step leaves this for the worker).
    Start {
        /// Entry branch.
        branch: String,
        /// Its context.
        context: Context,
    },
    /// Started.
    Running(RunState),
}

/// What moves a run.
#[derive(Debug, Clone, PartialEq)]
pub enum Trigger {
    /// Run the stored start.
    Start,
    /// An event for the interpreter.
    Event(Event),
    /// Start another branch in the run (the `hangup` branch after an inbound call).
    Branch(String),
    /// Check the run's waits against the call (digits, audio) and the clock.
    Poll,
}

/// Most triggers one drive handles before it gives up (a guard against event loops).
const MAX_TRIGGERS: usize = 1_000;
/// Most log lines kept per run.
const MAX_LOG: usize = 1_000;
/// Longest log line kept (characters; longer ones are cut).
const MAX_LOG_MESSAGE: usize = 1_024;
/// Most bytes of log kept per run (the oldest lines go first).
const MAX_LOG_BYTES: usize = 64 * 1024;

/// `text` cut to `max` characters (with an ellipsis when cut).
fn truncated(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

/// Drives a run through `triggers` and whatever they cause.
pub fn drive(
    state: AppState,
    run_id: i64,
    triggers: Vec<Trigger>,
) -> Pin<Box<dyn Future<Output = anyhow::Result<()>> + Send>> {
    Box::pin(async move {
        let mut queue: VecDeque<Trigger> = triggers.into();
        let mut handled = 0;
        while let Some(trigger) = queue.pop_front() {
            handled += 1;
            if handled > MAX_TRIGGERS {
                anyhow::bail!("run {run_id}: too many events in one drive");
            }
            let Some(run) = state.store.read(move |c| runs::by_id(c, run_id)).await? else {
                return Ok(());
            };
            if run.status != "running" && !matches!(trigger, Trigger::Branch(_)) {
                continue;
            }
            let step = match interpret(&state, &run, &trigger).await? {
                Interpreted::Step(step) => Some(*step),
                Interpreted::Skip => continue,
                Interpreted::PollOnly => None,
            };
            let input = CommitInput {
                run: run.clone(),
                step,
                now: state.clock.now(),
                simulated: state.simulated.clone(),
                max_state: state.config.max_run_state_bytes,
            };
            let out = state
                .store
                .write_repeatable(move |c| commit(c, &input))
                .await
                .map_err(|e| anyhow::anyhow!("{e}"))?;
            let Some(out) = out else {
                // Someone else saved the run meanwhile: read it again and retry.
                queue.push_front(trigger);
                continue;
            };
            if out.woke {
                state.wake.notify_one();
            }
            queue.extend(out.events.into_iter().map(Trigger::Event));
            for (fiber, kind) in out.io {
                let value = perform(&state, &run, kind).await;
                queue.push_back(Trigger::Event(Event::Result { fiber, value }));
            }
            if let Some(call_id) = out.hang_up {
                let others = super::call::hang_up(&state, call_id, 16, "callee").await?;
                for (other, triggers) in others {
                    if other == run_id {
                        queue.extend(triggers);
                    } else {
                        tokio::spawn(drive(state.clone(), other, triggers));
                    }
                }
            }
        }
        Ok(())
    })
}

enum Interpreted {
    Step(Box<Step>),
    Skip,
    PollOnly,
}

async fn interpret(state: &AppState, run: &Run, trigger: &Trigger) -> anyhow::Result<Interpreted> {
    if *trigger == Trigger::Poll {
        return Ok(Interpreted::PollOnly);
    }
    let mut stored: Stored = match run.state.as_deref().map(serde_json::from_str) {
        Some(Ok(s)) => s,
        _ => return Ok(Interpreted::Skip),
    };
    // The step sees the call as it is now: answered, ended, with its CDR so far.
    if let Some(call_id) = run.call_id
        && let Some(k) = state.store.read(move |c| calls::by_id(c, call_id)).await?
    {
        let view = super::call::call_object(&k);
        match &mut stored {
            Stored::Start { context, .. } => context.call = Some(view),
            Stored::Running(rs) => rs.set_call(view),
        }
    }
    let scenario = state.parsed.get(&run.script)?;
    let now = state.clock.now().to_rfc3339();
    let limits = Limits::default();
    let trigger = trigger.clone();
    let step = state
        .engine
        .run(run.account_id, move || match (trigger, stored) {
            (Trigger::Start, Stored::Start { branch, context }) => {
                Some(start(&scenario, &branch, context, &limits))
            }
            (Trigger::Event(e), Stored::Running(rs)) => {
                Some(resume(&scenario, rs, e, &now, &limits))
            }
            (Trigger::Branch(b), Stored::Running(rs)) => {
                Some(start_branch(&scenario, rs, &b, &now, &limits))
            }
            _ => None,
        })
        .await?;
    Ok(step.map_or(Interpreted::Skip, |s| Interpreted::Step(Box::new(s))))
}

struct CommitInput {
    run: Run,
    step: Option<Step>,
    now: Timestamp,
    simulated: Option<std::sync::Arc<dialtone_carrier::Simulated>>,
    /// The largest state and variables a run may store.
    max_state: usize,
}

struct CommitOutput {
    /// Events to feed back at once.
    events: Vec<Event>,
    /// Outside work, answered by a result for the fiber.
    io: Vec<(u32, CommandKind)>,
    /// Hang this call up after the commit.
    hang_up: Option<i64>,
    /// New work for the background workers was committed.
    woke: bool,
}

fn status_of(outcome: &Outcome) -> (&'static str, Option<String>) {
    match outcome {
        Outcome::Waiting => ("running", None),
        Outcome::Completed => ("completed", None),
        Outcome::Stopped => ("stopped", None),
        Outcome::Failed { error } => ("failed", Some(error.clone())),
    }
}

/// Saves the step and applies its call effects in one transaction; None when the run
/// changed since it was read.
/// Saves a step of a run with its effects. Runs as a repeatable write: nothing here acts
/// outside the connection (outside work is returned in `io`).
fn commit(c: &mut dyn Conn, input: &CommitInput) -> Result<Option<CommitOutput>, ApiError> {
    let CommitInput {
        run,
        step,
        now,
        simulated,
        max_state,
    } = input;
    let (now, max_state) = (*now, *max_state);
    let mut call = match run.call_id {
        Some(id) => calls::by_id(c, id)?,
        None => None,
    };
    let mut waits = pending::parse(&run.pending);
    let mut out = CommitOutput {
        events: Vec::new(),
        io: Vec::new(),
        hang_up: None,
        woke: false,
    };
    let (status, error, state_json, variables, log) = match &step {
        Some(step) => {
            let (mut status, mut error) = status_of(&step.outcome);
            let mut state_json = serde_json::to_string(&Stored::Running(step.state.clone()))
                .map_err(ApiError::internal)?;
            let mut variables = Value::Object(step.state.variables()).to_string();
            let mut log: Vec<Value> = serde_json::from_str(&run.log).unwrap_or_default();
            for entry in &step.log {
                let message = truncated(&entry.message, MAX_LOG_MESSAGE);
                log.push(json!({"at": entry.at, "level": entry.level, "message": message}));
            }
            if log.len() > MAX_LOG {
                log.drain(..log.len() - MAX_LOG);
            }
            let mut log_text = Value::Array(log.clone()).to_string();
            while log_text.len() > MAX_LOG_BYTES && !log.is_empty() {
                let drop = (log.len() / 4).max(1);
                log.drain(..drop);
                log_text = Value::Array(log.clone()).to_string();
            }
            // A run that grew past its bound fails, keeping what it had before this step.
            let size = state_json.len() + variables.len();
            if size > max_state {
                status = "failed";
                error = Some(format!(
                    "the run's state and variables would take {size} bytes: the limit is {max_state}"
                ));
                state_json = run.state.clone().unwrap_or_default();
                variables = run.variables.clone();
            }
            (status, error, Some(state_json), variables, log_text)
        }
        None => (
            "running",
            run.error.clone(),
            run.state.clone(),
            run.variables.clone(),
            run.log.clone(),
        ),
    };
    if let Some(step) = &step {
        for command in &step.commands {
            apply(
                c,
                run,
                &mut call,
                command,
                &mut waits,
                &mut out,
                now,
                simulated.as_deref(),
            )?;
        }
        if step.outcome.is_final() {
            // Only a call recording outlives the run: it is made when the call ends.
            waits.retain(|w| matches!(w, Pending::CallRecording { .. }));
            if run.kind == "inbound-call" && call.as_ref().is_some_and(|k| k.status != "ended") {
                out.hang_up = run.call_id;
            }
        }
    }
    settle(c, run, call.as_ref(), &mut waits, &mut out, now)?;
    let progress = Progress {
        status,
        state: state_json.as_deref(),
        variables: &variables,
        log: &log,
        error: error.as_deref(),
        pending: &pending::to_json(&waits),
        next_at: pending::next_deadline(&waits).map(Timestamp::from_millis),
    };
    if !runs::save(c, run.id, run.version, &progress, now)? {
        return Ok(None);
    }
    Ok(Some(out))
}

fn timeline(
    c: &mut dyn Conn,
    call: &Call,
    kind: &str,
    data: Value,
    now: Timestamp,
) -> Result<(), ApiError> {
    calls::log(c, call.id, kind, &data.to_string(), now)?;
    Ok(())
}

/// Applies one command: call effects now, waits recorded, outside work queued.
#[allow(clippy::too_many_arguments)]
fn apply(
    c: &mut dyn Conn,
    run: &Run,
    call: &mut Option<Call>,
    command: &Command,
    waits: &mut Vec<Pending>,
    out: &mut CommitOutput,
    now: Timestamp,
    simulated: Option<&dialtone_carrier::Simulated>,
) -> Result<(), ApiError> {
    let fiber = command.fiber;
    let done = |value: Value| Event::Result { fiber, value };
    let live = call.as_ref().filter(|k| k.status != "ended").cloned();
    match (&command.kind, live) {
        (CommandKind::SendSms { .. } | CommandKind::Fetch { .. }, _) => {
            out.io.push((fiber, command.kind.clone()));
        }
        (CommandKind::Wait { seconds }, _) => {
            let ms = (seconds * 1000.0).clamp(0.0, 86_400_000.0) as i64;
            waits.push(Pending::Wait {
                fiber,
                deadline: now.millis() + ms,
            });
        }
        (CommandKind::Hangup, Some(k)) => {
            timeline(c, &k, "hangup", json!({"source": "scenario"}), now)?;
            out.hang_up = Some(k.id);
            out.events.push(done(Value::Null));
        }
        (CommandKind::Answer, Some(k)) => {
            if calls::answer(c, k.id, now)? {
                timeline(c, &k, "answered", json!({}), now)?;
                *call = calls::by_id(c, k.id)?;
            }
            out.events.push(done(Value::Null));
        }
        (CommandKind::Ringing, Some(k)) => {
            timeline(c, &k, "ringing", json!({}), now)?;
            out.events.push(done(Value::Null));
        }
        (CommandKind::Say { what, language }, Some(k)) => {
            timeline(
                c,
                &k,
                "say",
                json!({"what": what, "language": language}),
                now,
            )?;
            out.events.push(done(Value::Null));
        }
        (CommandKind::Play { media }, Some(k)) => {
            timeline(c, &k, "play", json!({"media": media}), now)?;
            out.events.push(done(Value::Null));
        }
        (
            CommandKind::Gather {
                max_digits,
                min_digits,
                timeout_secs,
                finish_on_key,
                prompt,
            },
            Some(k),
        ) => {
            if let Some((what, language)) = prompt {
                timeline(
                    c,
                    &k,
                    "say",
                    json!({"what": what, "language": language}),
                    now,
                )?;
            }
            timeline(
                c,
                &k,
                "gather",
                json!({"maxDigits": max_digits, "timeout": timeout_secs}),
                now,
            )?;
            waits.push(Pending::Gather {
                fiber,
                max_digits: *max_digits,
                min_digits: *min_digits,
                finish_on_key: finish_on_key.clone(),
                deadline: now.millis() + i64::from(*timeout_secs) * 1000,
            });
        }
        (
            CommandKind::Record {
                max_duration_secs, ..
            },
            Some(k),
        ) => {
            timeline(
                c,
                &k,
                "record",
                json!({"maxDuration": max_duration_secs}),
                now,
            )?;
            waits.push(Pending::Record {
                fiber,
                started: now.millis(),
                deadline: now.millis() + i64::from(*max_duration_secs) * 1000,
            });
        }
        (CommandKind::StartRecording, Some(k)) => {
            timeline(c, &k, "startRecording", json!({}), now)?;
            waits.push(Pending::CallRecording {
                fiber,
                started: now.millis(),
            });
            out.events.push(done(json!({"ok": true})));
        }
        (CommandKind::Bridge, Some(k)) => {
            timeline(c, &k, "bridge", json!({}), now)?;
            waits.push(Pending::Bridge { fiber });
        }
        (
            CommandKind::Dial {
                targets,
                answer_on_branch,
                from,
            },
            Some(k),
        ) => {
            let mut connected = None;
            let mut last = "failed";
            for target in targets {
                let outcome = simulated
                    .map(|s| s.call_outcome(&target.number))
                    .unwrap_or(dialtone_carrier::CallOutcome::Failed);
                let status = match outcome {
                    dialtone_carrier::CallOutcome::Answered(_) => "answered",
                    dialtone_carrier::CallOutcome::Busy => "busy",
                    dialtone_carrier::CallOutcome::NoAnswer => "no-answer",
                    dialtone_carrier::CallOutcome::Failed => "failed",
                };
                timeline(
                    c,
                    &k,
                    "dial",
                    json!({"target": target.number, "status": status}),
                    now,
                )?;
                last = status;
                if status == "answered" {
                    connected = Some(target.number.clone());
                    break;
                }
            }
            match connected {
                Some(target) => {
                    let caller = from.clone().unwrap_or_else(|| k.callee.clone());
                    let leg = super::call::open_leg(c, run, &k, &caller, &target, now)?;
                    // Transparent forwarding (`autoAnswer: false`): the caller's leg is
                    // answered when the target answers, not before.
                    if k.answered.is_none() && calls::answer(c, k.id, now)? {
                        timeline(c, &k, "answered", json!({"by": target}), now)?;
                        *call = calls::by_id(c, k.id)?;
                    }
                    waits.push(Pending::Dial {
                        fiber,
                        target,
                        leg: leg.id,
                    });
                    out.woke = true;
                    if answer_on_branch.is_some() {
                        out.events.push(Event::DialAnswered { fiber });
                    }
                }
                None => out
                    .events
                    .push(done(json!({"ok": false, "status": last, "target": null}))),
            }
        }
        (kind, None) => {
            // A call action in a run without a live call: it does nothing and says so.
            let name = serde_json::to_value(kind)
                .ok()
                .and_then(|v| v.get("type").and_then(Value::as_str).map(str::to_owned))
                .unwrap_or_default();
            out.events.push(done(
                json!({"ok": false, "error": format!("{name}: the run has no live call")}),
            ));
        }
    }
    Ok(())
}

/// Answers the waits that are over: digits gathered, audio recorded, timers due.
fn settle(
    c: &mut dyn Conn,
    run: &Run,
    call: Option<&Call>,
    waits: &mut Vec<Pending>,
    out: &mut CommitOutput,
    now: Timestamp,
) -> Result<(), ApiError> {
    let mut dtmf = call.map(|k| k.dtmf.clone()).unwrap_or_default();
    let original = dtmf.clone();
    let mut audio: Option<Option<Vec<u8>>> = None;
    let mut kept = Vec::with_capacity(waits.len());
    for wait in waits.drain(..) {
        match &wait {
            Pending::Gather {
                fiber,
                max_digits,
                min_digits,
                finish_on_key,
                deadline,
            } => {
                let mut digits = String::new();
                let mut reason = None;
                let mut used = 0;
                for ch in dtmf.chars() {
                    used += ch.len_utf8();
                    if finish_on_key.as_deref().is_some_and(|k| k.starts_with(ch)) {
                        reason = Some("finishOnKey");
                        break;
                    }
                    digits.push(ch);
                    if digits.chars().count() as u32 >= *max_digits {
                        reason = Some("maxDigits");
                        break;
                    }
                }
                if reason.is_none() && now.millis() >= *deadline {
                    reason = Some("timeout");
                    used = dtmf.len();
                }
                match reason {
                    Some(reason) => {
                        dtmf = dtmf[used..].to_owned();
                        let ok = digits.chars().count() as u32 >= *min_digits;
                        if let Some(k) = call {
                            timeline(
                                c,
                                k,
                                "gathered",
                                json!({"digits": digits, "reason": reason}),
                                now,
                            )?;
                        }
                        out.events.push(Event::Result {
                            fiber: *fiber,
                            value: json!({"digits": digits, "reason": reason, "ok": ok}),
                        });
                    }
                    None => kept.push(wait),
                }
            }
            Pending::Record {
                fiber,
                started,
                deadline,
            } => {
                let Some(k) = call else { continue };
                let posted = match &audio {
                    Some(a) => a.clone(),
                    None => {
                        let a = calls::audio(c, k.id)?;
                        audio = Some(a.clone());
                        a
                    }
                };
                if posted.is_some() || now.millis() >= *deadline || k.status == "ended" {
                    let end = now.millis().min(*deadline);
                    let recording =
                        super::call::record(c, run, k, "voicemail", *started, end, posted, now)?;
                    calls::set_audio_none(c, k.id)?;
                    audio = Some(None);
                    out.events.push(Event::Result {
                        fiber: *fiber,
                        value: recording,
                    });
                    out.woke = true;
                } else {
                    kept.push(wait);
                }
            }
            Pending::Wait { fiber, deadline } => {
                if now.millis() >= *deadline {
                    out.events.push(Event::Result {
                        fiber: *fiber,
                        value: Value::Null,
                    });
                } else {
                    kept.push(wait);
                }
            }
            _ => kept.push(wait),
        }
    }
    *waits = kept;
    if let Some(k) = call
        && dtmf != original
    {
        calls::set_dtmf(c, k.id, &dtmf)?;
    }
    Ok(())
}

/// Performs a step's outside work and gives the value its fiber receives.
async fn perform(state: &AppState, run: &Run, kind: CommandKind) -> Value {
    match kind {
        CommandKind::SendSms { to, body, from } => {
            super::call::send_sms(state, run, to, body, from).await
        }
        CommandKind::Fetch {
            url,
            method,
            headers,
            body,
            timeout_ms,
            ..
        } => super::fetch::fetch(state, &url, &method, &headers, body, timeout_ms).await,
        _ => Value::Null,
    }
}

/// Emits an event of the run's account from inside a transaction.
pub fn emit(
    c: &mut dyn Conn,
    account_id: i64,
    kind: &str,
    data: &Value,
    now: Timestamp,
) -> Result<(), ApiError> {
    events::emit(c, account_id, kind, &data.to_string(), now)?;
    Ok(())
}
