//! What a run stores between steps (its `state` column) and what moves it (triggers).

use dialtone_actions::{Context, Event, RunState};
use dialtone_carrier::voice::DialOutcome;
use serde::{Deserialize, Serialize};

/// What a run's `state` column holds: the start it was asked for, or the interpreter state.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) enum Stored {
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
pub(crate) enum Trigger {
    /// The run is due: it starts if it has not started, else its waits are checked against
    /// the call and the clock (the worker sends this, after a restart too).
    Due,
    /// An event for the interpreter.
    Event(Event),
    /// The oldest answer of the run's inbox (its stored [`super::pending::Pending::Answer`]s),
    /// given before anything else reaches the run.
    Answer,
    /// Start another branch in the run (the `hangup` branch after an inbound call).
    Branch(String),
    /// Check the run's waits against the call (digits, audio) and the clock.
    Poll,
    /// A target of a `dial@v1` answered, or did not.
    Dialed {
        /// The fiber of the dial.
        fiber: u32,
        /// How the target answered.
        outcome: DialOutcome,
        /// The network that carried the attempt.
        network: String,
        /// The call id the leg was placed under (and keeps once answered).
        callid: String,
    },
    /// A prompt of the fiber (a `say`, a `play`, a gather's prompt) finished playing.
    Played {
        /// The fiber.
        fiber: u32,
    },
    /// A leg dialled from the run's call ended by itself (the target hung up): the dial
    /// is over and the bridge with it.
    LegEnded {
        /// The leg's internal key.
        leg: i64,
    },
}

/// Whether a run has started (its state is the interpreter's). A state that does not parse
/// counts as started: driving the run then fails it for that.
pub(crate) fn has_started(state: Option<&str>) -> bool {
    match state.map(serde_json::from_str::<Stored>) {
        None | Some(Ok(Stored::Start { .. })) => false,
        Some(Ok(Stored::Running(_)) | Err(_)) => true,
    }
}
