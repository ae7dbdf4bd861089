//! What the SIP network asks of the platform (the server implements [`Platform`]): whether a
//! call coming in is taken, what happens on the calls it carries, and the audio to play
//! (audio files of the call's account, text spoken).

use dialtone_carrier::BoxFuture;
use dialtone_carrier::voice::CallEvent;

use crate::media::Pcm;

/// An INVITE that came in through a trunk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IncomingCall {
    /// The trunk it came through.
    pub trunk: String,
    /// The calling number (E.164 when the trunk sent one), or `anonymous`.
    pub from: String,
    /// The number called, E.164.
    pub to: String,
}

/// Why a call is refused, answered to the caller as a SIP status with a `Reason` header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The Q.850 cause (the status follows from it).
    pub cause: i64,
    /// A word for the caller's logs (the `Reason` header's text).
    pub text: String,
    /// The SIP status, when it is not the cause's usual one (402 for an unfunded account).
    pub status: Option<u16>,
}

impl Refusal {
    /// A refusal with the cause's usual status.
    pub fn new(cause: i64, text: &str) -> Self {
        Self {
            cause,
            text: text.to_owned(),
            status: None,
        }
    }
}

/// A text spoken: its audio, and whether it was kept from an earlier time (the node
/// measures how soon prompts start both ways).
#[derive(Debug, Clone)]
pub struct Spoken {
    /// 8 kHz samples.
    pub pcm: Pcm,
    /// It came from the cache (nothing was synthesized).
    pub cached: bool,
}

/// What the platform did with a call coming in.
pub enum Admission {
    /// Taken: the call is recorded under `callid`; `start` runs what it runs (its scenario)
    /// and is spawned once the network carries the call under that id.
    Taken {
        /// The platform's call id.
        callid: String,
        /// What the call runs.
        start: BoxFuture<'static, ()>,
    },
    /// Refused.
    Refused(Refusal),
}

/// The platform, as the SIP network sees it.
pub trait Platform: Send + Sync + 'static {
    /// Takes or refuses a call coming in.
    fn admit<'a>(&'a self, call: &'a IncomingCall) -> BoxFuture<'a, Admission>;

    /// Records what happened on a call (in order, call by call). Implementations store it
    /// and return without waiting for what it makes the call's runs do, so that the next
    /// event of the call is never held up by them.
    fn report<'a>(&'a self, callid: &'a str, event: CallEvent) -> BoxFuture<'a, ()>;

    /// An audio file of the account of call `callid`, as 8 kHz samples.
    fn audio<'a>(&'a self, callid: &'a str, sid: &'a str) -> BoxFuture<'a, Result<Pcm, String>>;

    /// A text spoken in `language` (BCP 47).
    fn speak<'a>(
        &'a self,
        text: &'a str,
        language: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Spoken, String>>;
}
