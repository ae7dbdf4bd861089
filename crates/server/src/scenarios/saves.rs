//! What a step saves in its run: the run's new status, state, variables and log
//! ([`step_values`]), and the steps that save nothing else, saved together.
//!
//! Most steps of runs started through the API touch nothing but their run: no call, no
//! waits, no command with effects (`javascript@v1`, `log@v1`, branches). Saving each such
//! step in a transaction of its own cost a statement, a round trip on PostgreSQL, per step;
//! [`lone_save`] recognises them, and [`LoneSave`] writes those that are saved at the same
//! time with one statement (`runs::save_many`), each still checked against the version its
//! step was made from.

use dialtone_actions::{Outcome, Step};
use dialtone_domain::Timestamp;
use dialtone_domain::run::RunStatus;
use dialtone_store::coalesce::{Coalesced, GroupResults};
use dialtone_store::runs::{self, Progress, Run, StepSave};
use dialtone_store::{Conn, DbError};
use serde_json::{Value, json};

use super::pending;
use super::stored::Stored;

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

/// A run's stored state that does not read back: the run fails with this, loudly, instead
/// of waiting forever on waits it lost.
#[derive(Debug, thiserror::Error)]
#[error("the run's stored {what} cannot be read")]
pub(crate) struct Corrupt {
    pub(crate) what: &'static str,
    #[source]
    pub(crate) source: serde_json::Error,
}

/// Why a step's values could not be made.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ValuesError {
    #[error(transparent)]
    Corrupt(#[from] Corrupt),
    #[error(transparent)]
    Db(#[from] DbError),
}

fn status_of(outcome: &Outcome) -> (RunStatus, Option<String>) {
    match outcome {
        Outcome::Waiting => (RunStatus::Running, None),
        Outcome::Completed => (RunStatus::Completed, None),
        Outcome::Stopped => (RunStatus::Stopped, None),
        Outcome::Failed { error } => (RunStatus::Failed, Some(error.clone())),
    }
}

/// The run's log with a step's lines added, within the line, size and count bounds.
fn appended_log(run: &Run, step: &Step) -> Result<String, Corrupt> {
    let mut log: Vec<Value> = serde_json::from_str(&run.log).map_err(|source| Corrupt {
        what: "log",
        source,
    })?;
    for entry in &step.log {
        let message = truncated(&entry.message, MAX_LOG_MESSAGE);
        log.push(json!({"at": entry.at, "level": entry.level, "message": message}));
    }
    if log.len() > MAX_LOG {
        log.drain(..log.len() - MAX_LOG);
    }
    let mut text = Value::Array(log.clone()).to_string();
    while text.len() > MAX_LOG_BYTES && !log.is_empty() {
        let drop = (log.len() / 4).max(1);
        log.drain(..drop);
        text = Value::Array(log.clone()).to_string();
    }
    Ok(text)
}

/// The run's values after a step (or as they are, without one).
pub(crate) struct StepValues {
    pub status: RunStatus,
    pub error: Option<String>,
    pub state: Option<String>,
    pub variables: String,
    pub log: String,
}

/// What `step` makes of the run's values. A run that grew past `max_state` bytes of state
/// and variables fails, keeping what it had before this step.
pub(crate) fn step_values(
    run: &Run,
    step: Option<&Step>,
    max_state: usize,
) -> Result<StepValues, ValuesError> {
    let Some(step) = step else {
        return Ok(StepValues {
            status: RunStatus::Running,
            error: run.error.clone(),
            state: run.state.clone(),
            variables: run.variables.clone(),
            log: run.log.clone(),
        });
    };
    let (mut status, mut error) = status_of(&step.outcome);
    let mut state = serde_json::to_string(&Stored::Running(step.state.clone()))
        .map_err(|e| DbError::Other(format!("a run's state does not serialize: {e}")))?;
    let mut variables = Value::Object(step.state.variables()).to_string();
    let log = appended_log(run, step)?;
    let size = state.len() + variables.len();
    if size > max_state {
        status = RunStatus::Failed;
        error = Some(format!(
            "the run's state and variables would take {size} bytes: the limit is {max_state}"
        ));
        state = run.state.clone().unwrap_or_default();
        variables = run.variables.clone();
    }
    Ok(StepValues {
        status,
        error,
        state: Some(state),
        variables,
        log,
    })
}

/// A step that changes nothing but its run, saved with the others saved at the same time
/// (see the module).
pub(crate) struct LoneSave {
    id: i64,
    version: i64,
    values: StepValues,
    pending: String,
    now: Timestamp,
}

/// The save of `step` when it changes nothing but its run: a run without a call, with no
/// waits before the step and no commands in it (so none after), given nothing from outside
/// (`outside`). None when the step needs the whole commit.
pub(crate) fn lone_save(
    run: &Run,
    step: Option<&Step>,
    outside: bool,
    max_state: usize,
    now: Timestamp,
) -> Result<Option<LoneSave>, ValuesError> {
    let Some(step) = step else { return Ok(None) };
    if outside || run.call_id.is_some() || !step.commands.is_empty() {
        return Ok(None);
    }
    let waits = pending::parse(&run.pending).map_err(|source| Corrupt {
        what: "waits",
        source,
    })?;
    if !waits.is_empty() {
        return Ok(None);
    }
    let pending = pending::to_json(&waits)
        .map_err(|e| DbError::Other(format!("a run's waits do not serialize: {e}")))?;
    Ok(Some(LoneSave {
        id: run.id,
        version: run.version,
        values: step_values(run, Some(step), max_state)?,
        pending,
        now,
    }))
}

impl Coalesced for LoneSave {
    /// Whether the step was saved (false: the run changed since it was read).
    type Output = bool;
    type Error = DbError;

    fn run_all(c: &mut dyn Conn, items: &[Self]) -> GroupResults<Self> {
        let saves: Vec<StepSave<'_>> = items
            .iter()
            .map(|s| StepSave {
                id: s.id,
                version: s.version,
                progress: Progress {
                    status: s.values.status,
                    state: s.values.state.as_deref(),
                    variables: &s.values.variables,
                    log: &s.values.log,
                    error: s.values.error.as_deref(),
                    pending: &s.pending,
                    next_at: None,
                },
                now: s.now,
            })
            .collect();
        Ok(runs::save_many(c, &saves)?.into_iter().map(Ok).collect())
    }
}
