//! Drives one run: feeds triggers to the interpreter, commits each step (state, log, call
//! records, what it now waits for) with an optimistic version check, then performs the
//! step's outside work (networks, SMS, HTTP) and feeds the results back, until the run waits
//! or ends. What each command does is in [`super::commands`].

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;

use dialtone_actions::{Limits, Step, resume, start, start_branch};
use dialtone_domain::Timestamp;
use dialtone_domain::call::{HangupSource, NORMAL_CLEARING};
use dialtone_domain::run::{RunKind, RunStatus};
use dialtone_store::calls;
use dialtone_store::runs::{self, Progress, Run};
use dialtone_store::{Conn, DbError};
use serde_json::Value;

use super::commands::{self, CommitOutput, Scope};
use super::pending::{self, Pending};
use super::saves::{Corrupt, StepValues, ValuesError, lone_save, step_values};
use super::stored::{Stored, Trigger};
use super::{dialing, prompts, settle};
use crate::state::AppState;

/// Most triggers one drive handles before it gives up (a guard against event loops).
const MAX_TRIGGERS: usize = 1_000;

/// Drives a run through `triggers` and whatever they cause.
pub(crate) fn drive(
    state: AppState,
    run_id: i64,
    triggers: Vec<Trigger>,
) -> Pin<Box<dyn Future<Output = anyhow::Result<()>> + Send>> {
    drive_from(state, run_id, None, triggers)
}

/// Drives a run just created by this node, as it was stored: its first step does not read
/// it again.
pub(crate) fn drive_new(
    state: AppState,
    run: Run,
    triggers: Vec<Trigger>,
) -> Pin<Box<dyn Future<Output = anyhow::Result<()>> + Send>> {
    drive_from(state, run.id, Some(run), triggers)
}

fn drive_from(
    state: AppState,
    run_id: i64,
    mut known: Option<Run>,
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
            let run = match known.take() {
                Some(run) => run,
                None => match state.store.read(move |c| runs::by_id(c, run_id)).await? {
                    Some(run) => run,
                    None => return Ok(()),
                },
            };
            if run.status.is_final() && !matches!(trigger, Trigger::Branch(_)) {
                continue;
            }
            let trigger = first(&run, trigger, &mut queue);
            tracing::debug!(run = %run.sid, version = run.version, status = ?run.status, ?trigger, "drive");
            let step = match interpret(&state, &run, &trigger).await {
                Ok(Interpreted::Step(step)) => Some(*step),
                Ok(Interpreted::Skip) => continue,
                Ok(Interpreted::PollOnly) => None,
                Err(Failure::Corrupt(e)) => return fail_corrupt(&state, &run, e).await,
                Err(Failure::Other(e)) => return Err(e),
            };
            let moved = moved_by(&trigger);
            let answered = trigger == Trigger::Answer;
            let now = state.clock.now();
            let max_state = state.config.max_run_state_bytes;
            let outside = answered || moved.is_some();
            match save_lone(&state, &run, step.as_ref(), outside, now).await {
                Ok(Some(true)) => continue,
                // Someone else saved the run meanwhile: read it again and retry.
                Ok(Some(false)) => {
                    queue.push_front(trigger);
                    continue;
                }
                Ok(None) => {}
                Err(Failure::Corrupt(e)) => return fail_corrupt(&state, &run, e).await,
                Err(Failure::Other(e)) => return Err(e),
            }
            let input = CommitInput {
                run: run.clone(),
                step,
                answered,
                moved,
                now,
                max_state,
                networks: state.networks.clone(),
            };
            let out = match state
                .store
                .write_repeatable(move |c| commit(c, &input))
                .await
            {
                Ok(out) => out,
                // Someone else saved the run meanwhile (what this step wrote is undone):
                // read it again and retry.
                Err(CommitError::Stale) => {
                    queue.push_front(trigger);
                    continue;
                }
                Err(CommitError::Corrupt(e)) => return fail_corrupt(&state, &run, e).await,
                Err(CommitError::Db(e)) => {
                    return Err(
                        anyhow::Error::new(e).context(format!("run {}: saving a step", run.sid))
                    );
                }
            };
            if out.woke {
                state.wake.notify_one();
            }
            for _ in 0..out.answers {
                queue.push_front(Trigger::Answer);
            }
            for io in out.io {
                if let Some(next) = commands::perform(&state, &run, io).await {
                    queue.push_back(next);
                }
            }
            if let Some(call_id) = out.hang_up {
                let others =
                    super::hangup::hang_up(&state, call_id, NORMAL_CLEARING, HangupSource::Callee)
                        .await?;
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

/// Saves a step that changes nothing but its run with the others of its kind (see
/// `saves`): whether it was saved, None when the step needs the whole commit.
async fn save_lone(
    state: &AppState,
    run: &Run,
    step: Option<&Step>,
    outside: bool,
    now: dialtone_domain::Timestamp,
) -> Result<Option<bool>, Failure> {
    let save = match lone_save(run, step, outside, state.config.max_run_state_bytes, now) {
        Ok(Some(save)) => save,
        Ok(None) => return Ok(None),
        Err(ValuesError::Corrupt(e)) => return Err(Failure::Corrupt(e)),
        Err(ValuesError::Db(e)) => return Err(Failure::Other(e.into())),
    };
    match state.step_saves.run(save).await {
        Ok(saved) => Ok(Some(saved)),
        Err(e) => Err(Failure::Other(
            anyhow::Error::new(e).context(format!("run {}: saving a step", run.sid)),
        )),
    }
}

/// What a run takes before `trigger` (which then waits at the front of the queue): its
/// start when it has not started (a call that ended while its run was being set up: the
/// run starts, learns the end, then runs its hangup branch, as it would have a moment
/// later), else the answers of its inbox, in order.
fn first(run: &Run, trigger: Trigger, queue: &mut VecDeque<Trigger>) -> Trigger {
    if trigger != Trigger::Due
        && !run.status.is_final()
        && !super::stored::has_started(run.state.as_deref())
    {
        queue.push_front(trigger);
        Trigger::Due
    } else if trigger != Trigger::Answer && has_answers(run) {
        queue.push_front(trigger);
        Trigger::Answer
    } else {
        trigger
    }
}

/// What the outside world did, told by a trigger, for the run's waits.
fn moved_by(trigger: &Trigger) -> Option<Moved> {
    match trigger {
        Trigger::Dialed {
            fiber,
            outcome,
            network,
            callid,
        } => Some(Moved::Dialed {
            fiber: *fiber,
            outcome: *outcome,
            network: network.clone(),
            callid: callid.clone(),
        }),
        Trigger::Played { fiber } => Some(Moved::Played(*fiber)),
        Trigger::LegEnded { leg } => Some(Moved::LegEnded(*leg)),
        Trigger::Due | Trigger::Event(_) | Trigger::Answer | Trigger::Branch(_) | Trigger::Poll => {
            None
        }
    }
}

/// Whether the run's inbox holds answers (waits that do not read back fail the run when
/// its step is committed).
fn has_answers(run: &Run) -> bool {
    pending::parse(&run.pending).is_ok_and(|w| pending::first_answer(&w).is_some())
}

/// Fails a run whose stored state does not read back, and reports it.
async fn fail_corrupt(state: &AppState, run: &Run, e: Corrupt) -> anyhow::Result<()> {
    let (id, version, now) = (run.id, run.version, state.clock.now());
    let error = format!("{e}: {}", e.source);
    let (variables, log) = (run.variables.clone(), run.log.clone());
    state
        .store
        .write(move |c| {
            let progress = Progress {
                status: RunStatus::Failed,
                state: None,
                variables: &variables,
                log: if serde_json::from_str::<Value>(&log).is_ok() {
                    &log
                } else {
                    "[]"
                },
                error: Some(&error),
                pending: "[]",
                next_at: None,
            };
            runs::save(c, id, version, &progress, now)
        })
        .await?;
    Err(anyhow::Error::new(e).context(format!("run {} failed", run.sid)))
}

enum Interpreted {
    Step(Box<Step>),
    Skip,
    PollOnly,
}

enum Failure {
    Corrupt(Corrupt),
    Other(anyhow::Error),
}

impl<E: Into<anyhow::Error>> From<E> for Failure {
    fn from(e: E) -> Self {
        Self::Other(e.into())
    }
}

async fn interpret(state: &AppState, run: &Run, trigger: &Trigger) -> Result<Interpreted, Failure> {
    match trigger {
        // Nothing for the interpreter: the commit checks the waits.
        Trigger::Poll
        | Trigger::Dialed { .. }
        | Trigger::Played { .. }
        | Trigger::LegEnded { .. } => return Ok(Interpreted::PollOnly),
        Trigger::Due | Trigger::Event(_) | Trigger::Answer | Trigger::Branch(_) => {}
    }
    let Some(text) = run.state.as_deref() else {
        // Ended runs keep no state.
        return Ok(Interpreted::Skip);
    };
    let mut stored: Stored = serde_json::from_str(text).map_err(|source| {
        Failure::Corrupt(Corrupt {
            what: "state",
            source,
        })
    })?;
    // The step sees the call as it is now: answered, ended, with its CDR so far.
    if let Some(call_id) = run.call_id
        && let Some(k) = state.store.read(move |c| calls::by_id(c, call_id)).await?
    {
        let view = crate::voice::cdr::call_object(&k);
        match &mut stored {
            Stored::Start { context, .. } => context.call = Some(view),
            Stored::Running(rs) => rs.set_call(view),
        }
    }
    let scenario = state.parsed.get(&run.script)?;
    let now = state.clock.now().to_rfc3339();
    let limits = Limits::default();
    // The inbox's oldest answer, read with the run (the commit removes it, or finds the
    // run changed and the driver reads it again).
    let trigger = match trigger {
        Trigger::Answer => {
            let waits = pending::parse(&run.pending).map_err(|source| {
                Failure::Corrupt(Corrupt {
                    what: "waits",
                    source,
                })
            })?;
            match pending::first_answer(&waits) {
                Some(event) => Trigger::Event(event.clone()),
                None => return Ok(Interpreted::Skip),
            }
        }
        other => other.clone(),
    };
    state
        .engine
        .run(run.account_id, move || match (trigger, stored) {
            (Trigger::Due, Stored::Start { branch, context }) => {
                Interpreted::Step(Box::new(start(&scenario, &branch, context, &limits)))
            }
            (Trigger::Event(e), Stored::Running(rs)) => {
                Interpreted::Step(Box::new(resume(&scenario, rs, e, &now, &limits)))
            }
            (Trigger::Branch(b), Stored::Running(rs)) => {
                Interpreted::Step(Box::new(start_branch(&scenario, rs, &b, &now, &limits)))
            }
            // A started run that is due: its waits are checked by the commit.
            (
                Trigger::Due
                | Trigger::Poll
                | Trigger::Dialed { .. }
                | Trigger::Played { .. }
                | Trigger::LegEnded { .. },
                Stored::Running(_),
            ) => Interpreted::PollOnly,
            // Read as its event above.
            (Trigger::Answer, Stored::Running(_)) => Interpreted::Skip,
            // Nothing to resume or check before the start (`drive` starts a run first).
            (
                Trigger::Event(_)
                | Trigger::Answer
                | Trigger::Branch(_)
                | Trigger::Poll
                | Trigger::Dialed { .. }
                | Trigger::Played { .. }
                | Trigger::LegEnded { .. },
                Stored::Start { .. },
            ) => Interpreted::Skip,
        })
        .await
        .map_err(Failure::from)
}

struct CommitInput {
    run: Run,
    step: Option<Step>,
    /// The step was given the oldest answer of the run's inbox, which it now removes.
    answered: bool,
    /// What the outside world did that the waits must learn.
    moved: Option<Moved>,
    now: Timestamp,
    /// The largest state and variables a run may store.
    max_state: usize,
    /// The networks (whether the call's carries media).
    networks: std::sync::Arc<crate::networks::Networks>,
}

/// What the outside world did, for the waits of a run.
enum Moved {
    /// A dial target's outcome.
    Dialed {
        fiber: u32,
        outcome: dialtone_carrier::voice::DialOutcome,
        network: String,
        callid: String,
    },
    /// A prompt of the fiber finished playing.
    Played(u32),
    /// A leg dialled from the call ended by itself.
    LegEnded(i64),
}

/// Why a step was not saved.
#[derive(Debug, thiserror::Error)]
enum CommitError {
    /// The run changed since it was read (another drive saved it first). An error, not an
    /// empty success, so that the store rolls back what the step wrote before its version
    /// check: a voicemail stored twice by two drives that both found its audio, say.
    #[error("the run changed since it was read")]
    Stale,
    #[error(transparent)]
    Corrupt(#[from] Corrupt),
    #[error(transparent)]
    Db(#[from] DbError),
}

impl From<ValuesError> for CommitError {
    fn from(e: ValuesError) -> Self {
        match e {
            ValuesError::Corrupt(c) => Self::Corrupt(c),
            ValuesError::Db(d) => Self::Db(d),
        }
    }
}

/// Tells the run's waits what the outside world did.
fn apply_moved(c: &mut dyn Conn, scope: &mut Scope<'_>, moved: &Moved) -> Result<(), DbError> {
    match moved {
        Moved::Dialed {
            fiber,
            outcome,
            network,
            callid,
        } => {
            let attempt = dialing::Attempt {
                fiber: *fiber,
                outcome: *outcome,
                network,
                callid,
            };
            dialing::dialed(c, scope, &attempt)?;
        }
        Moved::Played(fiber) => prompts::played(scope, *fiber),
        Moved::LegEnded(leg) => dialing::leg_ended(scope, *leg),
    }
    Ok(())
}

/// Saves a step of a run with its effects, in one transaction; [`CommitError::Stale`] (its
/// writes undone) when the run changed since it was read. Runs as a repeatable write:
/// nothing here acts outside the connection (outside work is returned in `io`).
fn commit(c: &mut dyn Conn, input: &CommitInput) -> Result<CommitOutput, CommitError> {
    let CommitInput {
        run,
        step,
        answered,
        moved,
        now,
        max_state,
        networks,
    } = input;
    let (now, max_state) = (*now, *max_state);
    let mut call = match run.call_id {
        Some(id) => calls::by_id(c, id)?,
        None => None,
    };
    let media = call.as_ref().is_some_and(|k| {
        networks
            .voice(&k.network)
            .is_some_and(|n| n.carries_media())
    });
    let mut waits = pending::parse(&run.pending).map_err(|source| Corrupt {
        what: "waits",
        source,
    })?;
    if *answered {
        pending::remove_first_answer(&mut waits);
    }
    let mut out = CommitOutput::default();
    let StepValues {
        status,
        error,
        state: state_json,
        variables,
        log,
    } = step_values(run, step.as_ref(), max_state)?;
    let mut scope = Scope {
        run,
        call: &mut call,
        waits: &mut waits,
        out: &mut out,
        now,
        media,
    };
    if let Some(moved) = moved {
        apply_moved(c, &mut scope, moved)?;
    }
    if let Some(step) = &step {
        for command in &step.commands {
            commands::apply(c, &mut scope, command)?;
        }
        if step.outcome.is_final() {
            scope.waits.retain(Pending::outlives_run);
            if run.kind == RunKind::InboundCall
                && scope.call.as_ref().is_some_and(|k| k.status.is_live())
            {
                scope.out.hang_up = run.call_id;
            }
        }
    }
    settle::settle(c, &mut scope)?;
    // What the waits answered goes to the inbox, given by the driver next (an ended run
    // has no one left to give it to).
    let answers = std::mem::take(&mut out.events);
    if !status.is_final() {
        out.answers = answers.len();
        waits.extend(answers.into_iter().map(|event| Pending::Answer { event }));
    }
    let pending = pending::to_json(&waits)
        .map_err(|e| DbError::Other(format!("a run's waits do not serialize: {e}")))?;
    let progress = Progress {
        status,
        state: state_json.as_deref(),
        variables: &variables,
        log: &log,
        error: error.as_deref(),
        pending: &pending,
        next_at: pending::next_deadline(&waits).map(Timestamp::from_millis),
    };
    if !runs::save(c, run.id, run.version, &progress, now)? {
        return Err(CommitError::Stale);
    }
    Ok(out)
}

#[cfg(test)]
#[path = "driver_tests.rs"]
mod tests;
