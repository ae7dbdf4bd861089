//! The complete, serializable state of a run between two steps.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::outcome::Outcome;
use crate::scenario::ListId;

/// Everything needed to resume a run, including after a restart. The server stores it as JSON
/// and hands it back to [`crate::resume`] with the same scenario.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunState {
    /// Fingerprint of the scenario the run started with.
    pub(crate) scenario_fingerprint: String,
    /// The branch the run started on.
    pub(crate) branch: String,
    pub(crate) run: Value,
    pub(crate) scenario: Value,
    pub(crate) call: Option<Value>,
    pub(crate) sms: Option<Value>,
    /// Current `$` variables.
    pub(crate) variables: Map<String, Value>,
    pub(crate) fibers: Vec<Fiber>,
    pub(crate) next_fiber: u32,
    /// Event handlers registered by actions, run once when their event arrives.
    pub(crate) handlers: Vec<Handler>,
    /// Set once the run's call is gone; later call actions end their fiber.
    pub(crate) call_ended: bool,
    /// Entries executed over the run's life.
    pub(crate) steps_total: u64,
    /// Set once the run is over.
    pub(crate) finished: Option<Outcome>,
}

/// A thread of execution: the main branch, an answered leg, or an event handler.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Fiber {
    pub id: u32,
    /// Lists being executed, innermost last.
    pub frames: Vec<Frame>,
    /// The command this fiber waits for, if any.
    pub waiting: Option<Waiting>,
    /// Whether this fiber controls a call leg (implicit hangup when it ends).
    pub owns_call: bool,
    /// The fiber whose `Dial` started this one (answered leg), if any.
    pub origin: Option<u32>,
    /// Values only this fiber sees (`event`, `recording` in event handlers).
    pub locals: Map<String, Value>,
}

/// A position inside an action list.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Frame {
    pub list: ListId,
    pub index: usize,
    pub phase: Phase,
}

/// How far the entry at `index` has gone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) enum Phase {
    /// Not started: evaluate `if`, then run the action.
    Start,
    /// The action is done: run `then`.
    Then,
    /// `then` is done: follow `goto` or go to the next entry.
    Goto,
}

/// What a fiber waits for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "for", rename_all = "camelCase")]
pub(crate) enum Waiting {
    /// The command of the entry in the innermost frame.
    #[serde(rename_all = "camelCase")]
    Action {
        /// The command is a hangup@v1.
        hangup: bool,
        /// The command is a dial with this `answerOnBranch`.
        answer_on_branch: Option<String>,
        /// `DialAnswered` already started the branch.
        answered: bool,
    },
    /// The answer issued because of `autoAnswer`.
    ImplicitAnswer,
    /// The hangup issued when a call fiber ended with its call up.
    ImplicitHangup,
}

/// An event handler waiting for its event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Handler {
    pub fiber: u32,
    pub name: String,
    pub list: ListId,
    /// Variable the event value is bound to besides `event`.
    pub binds: String,
}

impl RunState {
    /// The current variables with their values (`$name` keys).
    pub fn variables(&self) -> Map<String, Value> {
        self.variables.clone()
    }

    /// Replaces the run's view of its call (`call` in expressions): the host refreshes it
    /// before each step, so a step sees the call as it is then (answered, ended, its CDR),
    /// not as it was when the run started.
    pub fn set_call(&mut self, call: Value) {
        self.call = Some(call);
    }

    /// The branch the run started on.
    pub fn branch(&self) -> &str {
        &self.branch
    }

    /// The final outcome, once the run is over.
    pub fn outcome(&self) -> Option<&Outcome> {
        self.finished.as_ref()
    }

    /// For a fiber started by `DialAnswered`, the fiber whose `Dial` it belongs to: its call
    /// commands act on that dial's answered leg.
    pub fn fiber_origin(&self, fiber: u32) -> Option<u32> {
        self.fibers
            .iter()
            .find(|f| f.id == fiber)
            .and_then(|f| f.origin)
    }

    /// Entries executed over the run's life.
    pub fn steps_total(&self) -> u64 {
        self.steps_total
    }

    /// Whether a call leg of the run is still up, as far as the interpreter knows.
    pub fn call_up(&self) -> bool {
        !self.call_ended && self.fibers.iter().any(|f| f.owns_call)
    }
}
