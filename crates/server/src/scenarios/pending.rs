//! What a run waits for outside the interpreter, stored with the run (`runs.pending`):
//! digits, a recording, a timer, a dialled target, the end of a call.

use dialtone_actions::{DialTarget, Event};
use serde::{Deserialize, Serialize};

/// One command of a run waiting for the outside world.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub(crate) enum Pending {
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
        /// Its prompt is still playing on a network that carries media: the timeout
        /// starts when it ends (`deadline` is then only the fallback of a node that died).
        #[serde(default)]
        prompt: bool,
        /// The gather's timeout (ms), started again when its prompt ends.
        #[serde(default)]
        timeout_ms: i64,
    },
    /// `say`/`play` on a network that carries media: the prompt is being played.
    #[serde(rename_all = "camelCase")]
    Playing {
        /// Fiber to answer.
        fiber: u32,
        /// Past this, a node that died while playing has left the prompt unanswered (ms).
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
        /// The language to transcribe it in, when asked.
        #[serde(default)]
        transcription: Option<String>,
    },
    /// `startRecording@v1`: a call recording, ready when the call ends (and, when a
    /// transcription was asked, when its transcript is).
    #[serde(rename_all = "camelCase")]
    CallRecording {
        /// Fiber whose `events.ready` runs.
        fiber: u32,
        /// Start (ms).
        started: i64,
        /// The language to transcribe it in, when asked.
        #[serde(default)]
        transcription: Option<String>,
    },
    /// `wait@v1`.
    #[serde(rename_all = "camelCase")]
    Wait {
        /// Fiber to answer.
        fiber: u32,
        /// When it is over (ms).
        deadline: i64,
    },
    /// `dial@v1` ringing its targets one after the other, through their networks.
    #[serde(rename_all = "camelCase")]
    Dialing {
        /// Fiber to answer.
        fiber: u32,
        /// The targets, in order.
        targets: Vec<DialTarget>,
        /// The target ringing now (an index of `targets`).
        next: usize,
        /// Caller id presented.
        from: String,
        /// Start the `answerOnBranch` when a target answers.
        answer_on_branch: bool,
        /// Past this, a node that died while dialling has left the dial unanswered: it
        /// answers `no-answer` (ms).
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
    /// An answer settled with the run's waits and not yet given to the interpreter (its
    /// inbox): stored in the same commit that settled it, so that no other drive of the run
    /// (the call's hangup, a node that restarts) can come between and lose it. Every drive
    /// gives these first, in order.
    #[serde(rename_all = "camelCase")]
    Answer {
        /// The event for the interpreter.
        event: Event,
    },
}

impl Pending {
    /// When this wait ends by itself, if it does.
    pub(crate) fn deadline(&self) -> Option<i64> {
        match self {
            Pending::Gather { deadline, .. }
            | Pending::Playing { deadline, .. }
            | Pending::Record { deadline, .. }
            | Pending::Wait { deadline, .. }
            | Pending::Dialing { deadline, .. } => Some(*deadline),
            // Due at once: a node that died before giving it leaves it to the worker.
            Pending::Answer { .. } => Some(0),
            Pending::CallRecording { .. } | Pending::Dial { .. } | Pending::Bridge { .. } => None,
        }
    }

    /// The wait outlives its run: a call recording is made when the call ends.
    pub(crate) fn outlives_run(&self) -> bool {
        match self {
            Pending::CallRecording { .. } => true,
            Pending::Gather { .. }
            | Pending::Playing { .. }
            | Pending::Record { .. }
            | Pending::Wait { .. }
            | Pending::Dialing { .. }
            | Pending::Dial { .. }
            | Pending::Bridge { .. }
            | Pending::Answer { .. } => false,
        }
    }
}

/// Reads a run's pending list; a list that does not parse is an error (a run whose waits
/// were lost would wait forever).
pub(crate) fn parse(json: &str) -> Result<Vec<Pending>, serde_json::Error> {
    serde_json::from_str(json)
}

/// Writes a run's pending list.
pub(crate) fn to_json(list: &[Pending]) -> Result<String, serde_json::Error> {
    serde_json::to_string(list)
}

/// The oldest answer of a run's inbox, if any.
pub(crate) fn first_answer(list: &[Pending]) -> Option<&Event> {
    list.iter().find_map(|w| match w {
        Pending::Answer { event } => Some(event),
        _ => None,
    })
}

/// Removes the oldest answer of a run's inbox (the one a step was just given).
pub(crate) fn remove_first_answer(list: &mut Vec<Pending>) {
    if let Some(at) = list
        .iter()
        .position(|w| matches!(w, Pending::Answer { .. }))
    {
        list.remove(at);
    }
}

/// The earliest deadline of a list, if any.
pub(crate) fn next_deadline(list: &[Pending]) -> Option<i64> {
    list.iter().filter_map(Pending::deadline).min()
}
