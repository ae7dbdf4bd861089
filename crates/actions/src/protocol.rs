//! The driver protocol: what the server gives the interpreter (context, events, limits) and
//! what it gets back (commands, outcome, log lines).

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

pub use crate::outcome::Outcome;
use crate::state::RunState;

/// What a run starts with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Context {
    /// The current time, RFC 3339 (the `now` Date of expressions).
    pub now: String,
    /// `{id, type}` of the run (`run` in expressions).
    pub run: Value,
    /// `{sid, name}` of the scenario (`scenario` in expressions).
    pub scenario: Value,
    /// The inbound or answered call (`call` in expressions), if the run has one.
    pub call: Option<Value>,
    /// The inbound SMS (`sms` in expressions), if the run has one.
    pub sms: Option<Value>,
    /// Input variables; names with or without the leading `$`. They override the scenario's
    /// `variables`.
    pub input: Map<String, Value>,
}

/// Limits of one run's JavaScript.
#[derive(Debug, Clone, PartialEq)]
pub struct Limits {
    /// Time allowed to all evaluations of one `start`/`resume` call (default 100 ms).
    pub cpu_time: Duration,
    /// Memory the JavaScript of one batch may allocate (default 8 MiB).
    pub memory_bytes: usize,
    /// Entries executed in one `start`/`resume` call before the run fails; guards against
    /// `goto` loops that never wait (default 10 000).
    pub max_steps: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            cpu_time: Duration::from_millis(100),
            memory_bytes: 8 * 1024 * 1024,
            max_steps: 10_000,
        }
    }
}

/// The result of `start` or `resume`: the state to store, the commands to execute, the outcome
/// and the log lines written meanwhile.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Step {
    /// The complete state of the run; store it and give it back to `resume`.
    pub state: RunState,
    /// Commands to execute now, each answered later by one `Event::Result` of its fiber.
    pub commands: Vec<Command>,
    /// Where the run stands.
    pub outcome: Outcome,
    /// Lines written by `log@v1`, `console.*` and the interpreter.
    pub log: Vec<LogEntry>,
}

/// A thing the server must do, on behalf of one fiber of the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Command {
    /// The fiber that waits for this command's result.
    pub fiber: u32,
    /// What to do.
    pub kind: CommandKind,
}

/// One dial target.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DialTarget {
    /// Number to call.
    pub number: String,
    /// Seconds to ring.
    pub timeout_secs: u32,
}

/// What a command asks the server to do. The value to answer with (`Event::Result`) is given
/// for each; commands without a meaningful result are answered with `null`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum CommandKind {
    /// Answer the call.
    Answer,
    /// Signal ringing.
    Ringing,
    /// Hang up the call (all the run's branches end when its result arrives).
    Hangup,
    /// Speak a text.
    #[serde(rename_all = "camelCase")]
    Say {
        /// Text to speak.
        what: String,
        /// Voice language.
        language: Option<String>,
    },
    /// Play an audio file.
    #[serde(rename_all = "camelCase")]
    Play {
        /// Audio file sid.
        media: String,
    },
    /// Collect DTMF digits; result `{digits, reason}`.
    #[serde(rename_all = "camelCase")]
    Gather {
        /// Most digits.
        max_digits: u32,
        /// Fewest digits.
        min_digits: u32,
        /// Seconds to wait.
        timeout_secs: u32,
        /// Key that ends the input.
        finish_on_key: Option<String>,
        /// Text spoken first, with its language.
        prompt: Option<(String, Option<String>)>,
    },
    /// Record a voicemail; result: the recording.
    #[serde(rename_all = "camelCase")]
    Record {
        /// Longest recording.
        max_duration_secs: u32,
        /// Key that ends the recording.
        finish_on_key: Option<String>,
        /// The language to transcribe it in, when a transcription was asked for.
        transcription: Option<String>,
    },
    /// Start recording the call; result: the recording being made. Later, send
    /// `Event::ActionEvent{name: "ready"}` when it is available (with its transcript, when a
    /// transcription was asked for).
    #[serde(rename_all = "camelCase")]
    StartRecording {
        /// The language to transcribe it in, when a transcription was asked for.
        transcription: Option<String>,
    },
    /// Call targets; result `{ok, status, target}` once the dial is over.
    #[serde(rename_all = "camelCase")]
    Dial {
        /// Targets to ring.
        targets: Vec<DialTarget>,
        /// Branch to start on the answered leg (send `Event::DialAnswered`).
        answer_on_branch: Option<String>,
        /// Caller id.
        from: Option<String>,
    },
    /// Connect the answered leg with the original call; result when the bridge ends.
    Bridge,
    /// Send an SMS; result `{ok, sids}`.
    #[serde(rename_all = "camelCase")]
    SendSms {
        /// Recipients.
        to: Vec<String>,
        /// Text.
        body: String,
        /// Sender.
        from: Option<String>,
    },
    /// HTTP request; result `{ok, status, statusText, headers, body, json}`.
    #[serde(rename_all = "camelCase")]
    Fetch {
        /// URL.
        url: String,
        /// Method, upper case.
        method: String,
        /// Headers in order.
        headers: Vec<(String, String)>,
        /// Body.
        body: Option<String>,
        /// Timeout.
        timeout_ms: u64,
        /// 1 or 2 (fetch@v1 or fetch@v2).
        version: u8,
    },
    /// Pause; result `null` when the time is up.
    #[serde(rename_all = "camelCase")]
    Wait {
        /// Seconds.
        seconds: f64,
    },
}

/// What happened, fed to `resume`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum Event {
    /// The result of the command the fiber waits for.
    Result {
        /// The fiber of the command.
        fiber: u32,
        /// Its result.
        value: Value,
    },
    /// The run's call is gone (hung up by the far end, or failed).
    CallEnded,
    /// A target of the fiber's `Dial` answered; starts its `answerOnBranch` in a new fiber.
    DialAnswered {
        /// The fiber of the `Dial` command.
        fiber: u32,
    },
    /// An event of an action of the fiber (e.g. `ready` of `startRecording@v1`).
    ActionEvent {
        /// The fiber of the action's command.
        fiber: u32,
        /// Event name.
        name: String,
        /// Its value (the recording for `ready`).
        value: Value,
    },
    /// Stop the run.
    Stop,
}

/// A line of the run's log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogEntry {
    /// When (the `now` of the step).
    pub at: String,
    /// What.
    pub message: String,
    /// `info` (log@v1, console.log), `debug`, `warn` or `error`.
    pub level: String,
}
