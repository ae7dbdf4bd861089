//! What a command works on while its step is saved ([`Scope`]: the run, its call, its
//! waits, the time) and what the saved step leaves for after the commit ([`CommitOutput`]:
//! events to feed back, outside work as [`Io`]). A leaf: the modules that apply commands and
//! settle waits all use it.

use dialtone_actions::Event;
use dialtone_carrier::voice::{CallAction, Dial};
use dialtone_domain::Timestamp;
use dialtone_store::calls::Call;
use dialtone_store::runs::Run;
use serde_json::Value;

use super::pending::Pending;

/// Outside work a committed step asks for.
#[derive(Debug, Clone)]
pub(crate) enum Io {
    /// `sms@v1`; the fiber receives `{ok, sids}`.
    Sms {
        /// Fiber to answer.
        fiber: u32,
        /// Recipients.
        to: Vec<String>,
        /// Text.
        body: String,
        /// Sender.
        from: Option<String>,
    },
    /// `fetch@v1`/`fetch@v2`; the fiber receives the response.
    Fetch {
        /// Fiber to answer.
        fiber: u32,
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
    },
    /// Ring a `dial@v1` target; the outcome comes back as [`super::stored::Trigger::Dialed`].
    Dial {
        /// Fiber of the dial.
        fiber: u32,
        /// The call to place.
        dial: Dial,
    },
    /// An action on a live leg, for the network that carries it.
    Act {
        /// The leg's call id.
        callid: String,
        /// Its network.
        network: String,
        /// What to do.
        action: CallAction,
    },
}

/// What committing a step gives the driver to do next.
#[derive(Debug, Default)]
pub(crate) struct CommitOutput {
    /// Events for the interpreter: the commit stores them in the run's inbox
    /// ([`Pending::Answer`]), from which the driver gives them.
    pub events: Vec<Event>,
    /// How many answers the commit put in the inbox (the driver gives them next).
    pub answers: usize,
    /// Outside work.
    pub io: Vec<Io>,
    /// Hang this call up after the commit.
    pub hang_up: Option<i64>,
    /// New work for the background workers was committed.
    pub woke: bool,
}

/// What a command works on: the run, its call as it stands, its waits, and the time.
pub(crate) struct Scope<'a> {
    /// The run.
    pub run: &'a Run,
    /// Its call, kept current as commands change it.
    pub call: &'a mut Option<Call>,
    /// Its waits.
    pub waits: &'a mut Vec<Pending>,
    /// What the driver does after the commit.
    pub out: &'a mut CommitOutput,
    /// Now.
    pub now: Timestamp,
    /// The call's network carries media: prompts take their real time.
    pub media: bool,
}

impl Scope<'_> {
    /// Answers the command of `fiber` with `value`.
    pub(crate) fn done(&mut self, fiber: u32, value: Value) {
        self.out.events.push(Event::Result { fiber, value });
    }

    /// Asks the call's network to carry out `action` once the step is committed.
    pub(crate) fn act(&mut self, call: &Call, action: CallAction) {
        self.out.io.push(Io::Act {
            callid: call.callid.clone(),
            network: call.network.clone(),
            action,
        });
    }
}
