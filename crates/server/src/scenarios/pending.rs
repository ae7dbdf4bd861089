//! What a run waits for outside the interpreter, stored with the run (`runs.pending`):
//! digits, a recording, a timer, the end of a call.

use serde::{Deserialize, Serialize};

/// One command of a run waiting for the outside world.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum Pending {
    /// `gather@v2`: digits from the caller, until `deadline` (ms since the epoch).
    #[serde(rename_all = "camelCase")]
    Gather {
        /// Fiber to answer.
        fiber: u32,
        /// Most digits.
        max_digits: u32,
        /// Fewest digits (fewer at the deadline still answer, with reason `timeout`).
        min_digits: u32,
        /// Key that ends the input.
        finish_on_key: Option<String>,
        /// When the wait ends.
        deadline: i64,
    },
    /// `record@v1`: a voicemail, ended by audio from the caller, the deadline or hangup.
    #[serde(rename_all = "camelCase")]
    Record {
        /// Fiber to answer.
        fiber: u32,
        /// Start (ms).
        started: i64,
        /// Longest recording end (ms).
        deadline: i64,
    },
    /// `startRecording@v1`: a call recording, ready when the call ends.
    #[serde(rename_all = "camelCase")]
    CallRecording {
        /// Fiber whose `events.ready` runs.
        fiber: u32,
        /// Start (ms).
        started: i64,
    },
    /// `wait@v1`.
    #[serde(rename_all = "camelCase")]
    Wait {
        /// Fiber to answer.
        fiber: u32,
        /// When it is over (ms).
        deadline: i64,
    },
    /// `dial@v1` that connected: its result comes when the call ends.
    #[serde(rename_all = "camelCase")]
    Dial {
        /// Fiber to answer.
        fiber: u32,
        /// The target that answered.
        target: String,
        /// The outbound leg's internal key.
        leg: i64,
    },
    /// `bridge@v1`: holds until the call ends.
    #[serde(rename_all = "camelCase")]
    Bridge {
        /// Fiber to answer.
        fiber: u32,
    },
}

impl Pending {
    /// When this wait ends by itself, if it does.
    pub fn deadline(&self) -> Option<i64> {
        match self {
            Pending::Gather { deadline, .. }
            | Pending::Record { deadline, .. }
            | Pending::Wait { deadline, .. } => Some(*deadline),
            _ => None,
        }
    }
}

/// Reads a run's pending list (an unreadable list is treated as empty).
pub fn parse(json: &str) -> Vec<Pending> {
    serde_json::from_str(json).unwrap_or_default()
}

/// Writes a run's pending list.
pub fn to_json(list: &[Pending]) -> String {
    serde_json::to_string(list).unwrap_or_else(|_| "[]".to_owned())
}

/// The earliest deadline of a list, if any.
pub fn next_deadline(list: &[Pending]) -> Option<i64> {
    list.iter().filter_map(Pending::deadline).min()
}
