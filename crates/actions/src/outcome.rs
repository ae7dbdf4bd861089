//! How a run stands after a step.

use serde::{Deserialize, Serialize};

/// Where a run stands after a step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum Outcome {
    /// Waits for command results or action events.
    Waiting,
    /// Every branch ended.
    Completed,
    /// Ended by `Event::Stop`.
    Stopped,
    /// Ended by an error (expression, parameter, limit).
    Failed {
        /// What went wrong.
        error: String,
    },
}

impl Outcome {
    /// Whether the run is over.
    pub fn is_final(&self) -> bool {
        !matches!(self, Outcome::Waiting)
    }
}
