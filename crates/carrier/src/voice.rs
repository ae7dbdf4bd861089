//! The voice boundary: what a scenario needs of a call, asked of the network that carries
//! it, and what the network reports back.
//!
//! A network implements [`VoiceNetwork`]. The platform stores every call, its CDR and its
//! timeline, and decides what a scenario does; the network only carries it out on the wire
//! (the simulated network, [`crate::Simulated`], has no wire: its far end is the sandbox API,
//! which reports the caller's digits, audio and hangup as [`CallEvent`]s). [`crate::Routes`]
//! picks the network of each dialled number by prefix, as it does for SMS; a call leg keeps
//! the network it was placed or received on.
//!
//! Every method answers at once for the simulator and after the wire answers for a real
//! network; none of them holds the platform's database.

use dialtone_domain::call::HangupSource;

use crate::BoxFuture;

/// Names a prompt (`say`, `play`) so that a network carrying real media can report when it
/// finished: the run and the fiber waiting for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PlayTag {
    /// The run's internal key.
    pub run: i64,
    /// The fiber of the run that waits.
    pub fiber: u32,
}

/// What a scenario asks of a live call leg.
#[derive(Debug, Clone, PartialEq)]
pub enum CallAction {
    /// Answer the call (200 OK on SIP).
    Answer,
    /// Tell the caller it rings (180 on SIP).
    Ringing,
    /// Speak a text.
    Say {
        /// The text.
        text: String,
        /// Its language (BCP 47), when the scenario gave one.
        language: Option<String>,
        /// Report [`CallEvent::Played`] with this tag when it was spoken (networks that
        /// carry media; see [`VoiceNetwork::carries_media`]).
        tag: Option<PlayTag>,
    },
    /// Play an audio file of the account (8 kHz 16-bit WAV, stored by the platform).
    Play {
        /// The audio file's sid.
        audio_file: String,
        /// Report [`CallEvent::Played`] with this tag when it was played.
        tag: Option<PlayTag>,
    },
    /// Collect digits; they come back as [`CallEvent::Digits`].
    Collect {
        /// Most digits wanted.
        max_digits: u32,
        /// How long to wait, in milliseconds.
        timeout_ms: u64,
        /// The key that ends the input.
        finish_on_key: Option<String>,
    },
    /// Record what the caller says; the audio comes back as [`CallEvent::Audio`] (after a
    /// beep, until the longest duration, the finish key or the end of the call).
    Record {
        /// Longest recording, in milliseconds.
        max_ms: u64,
        /// The key that ends the recording.
        finish_on_key: Option<String>,
    },
    /// Record the whole call, both parties, until it ends.
    StartRecording,
    /// Relay audio and digits between this leg and another leg of the same network.
    Bridge {
        /// The call id of the other leg.
        with: String,
    },
    /// End the call with a Q.850 cause (BYE, or a final answer when not yet answered).
    HangUp {
        /// The Q.850 cause.
        cause: i64,
    },
}

impl CallAction {
    /// The action's name, for logs and the call's timeline.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Answer => "answer",
            Self::Ringing => "ringing",
            Self::Say { .. } => "say",
            Self::Play { .. } => "play",
            Self::Collect { .. } => "gather",
            Self::Record { .. } => "record",
            Self::StartRecording => "startRecording",
            Self::Bridge { .. } => "bridge",
            Self::HangUp { .. } => "hangup",
        }
    }
}

/// What a network reports of a call leg.
#[derive(Debug, Clone, PartialEq)]
pub enum CallEvent {
    /// The far end answered (an outbound leg).
    Answered,
    /// The caller pressed keys (RFC 4733 events or in-band tones on SIP).
    Digits(String),
    /// Audio the caller spoke for a recording: 8 kHz mono 16-bit WAV.
    Audio(Vec<u8>),
    /// The recording of the whole call (both parties, 8 kHz mono 16-bit WAV), delivered by
    /// a network that records media before it reports the hangup.
    CallRecorded(Vec<u8>),
    /// A prompt given a [`PlayTag`] finished playing (or was cut short by a key or the end
    /// of the call).
    Played(PlayTag),
    /// The call ended.
    Hangup {
        /// The Q.850 cause.
        cause: i64,
        /// Who ended it.
        source: HangupSource,
    },
}

/// How a dialled target answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DialOutcome {
    /// It answered: the leg is up.
    Answered,
    /// The line is busy.
    Busy,
    /// Nobody answered in time.
    NoAnswer,
    /// The call could not be placed.
    Failed,
}

impl DialOutcome {
    /// The word `dial@v1` results carry (`answered`, `busy`, `no-answer`, `failed`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Answered => "answered",
            Self::Busy => "busy",
            Self::NoAnswer => "no-answer",
            Self::Failed => "failed",
        }
    }
}

/// A network refused or could not carry out an action.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{network}: {reason}")]
pub struct VoiceError {
    /// The network's name.
    pub network: String,
    /// What went wrong.
    pub reason: String,
}

/// A call to place from a scenario (`dial@v1`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dial {
    /// The call id of the leg the scenario runs on (the one the new leg is bridged to).
    pub parent_callid: String,
    /// The call id the new leg gets when it answers (the platform names it beforehand, so
    /// that a network can carry out actions on it as soon as it is recorded).
    pub callid: String,
    /// Caller id presented.
    pub from: String,
    /// The number dialled, E.164.
    pub to: String,
    /// How long it may ring, in milliseconds.
    pub ring_ms: u64,
}

/// A network that carries calls.
pub trait VoiceNetwork: Send + Sync + 'static {
    /// Stable name of this network (stored with each call leg it carries).
    fn name(&self) -> &str;

    /// Whether prompts take real time on this network: a scenario's `say` and `play` then
    /// wait for [`CallEvent::Played`], a gather's timeout starts after its prompt, and a
    /// recording is delivered before the hangup. The simulated network carries no media:
    /// its prompts are done as soon as they are asked for.
    fn carries_media(&self) -> bool {
        false
    }

    /// Places a call and resolves once it is answered, refused or timed out.
    fn dial<'a>(&'a self, dial: &'a Dial) -> BoxFuture<'a, DialOutcome>;

    /// Carries out an action on a live leg of this network (`callid`); resolves when the
    /// network took it (media actions run on; their results come back as [`CallEvent`]s).
    fn act<'a>(
        &'a self,
        callid: &'a str,
        action: &'a CallAction,
    ) -> BoxFuture<'a, Result<(), VoiceError>>;
}
