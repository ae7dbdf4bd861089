//! The carrier boundary: how dialtone hands SMS to a network and learns what became of them,
//! and ([`voice`]) how it has a network carry out what a scenario does on a call.
//!
//! A network implements [`Carrier`]. The simulated network ([`Simulated`]) is the embedded
//! default: it needs no connection and decides every outcome from the destination number,
//! so developers get realistic, repeatable status progressions on a laptop. Operators bind
//! real SMSCs with [`smpp::Smpp`]; [`Routes`] picks the network of each destination. This
//! crate owns the protocol side only; storing statuses and emitting events is the server's job.
//!
//! A real network takes an SMS part by part ([`Carrier::submit_part`]): the platform stores
//! each part's message id as soon as the network answers for it, so a receipt never waits
//! for the slowest part of a batch, and a part refused for now is submitted again alone,
//! with the SMS's own concatenation reference ([`OutboundSms::reference`]).

mod routes;
mod simulated;
pub mod smpp;
pub mod voice;

use std::future::Future;
use std::pin::Pin;

pub use tokio::time::Instant;

use dialtone_domain::sms::{Encoding, SmsStatus};

pub use routes::Routes;
pub use simulated::{CallOutcome, Simulated};
pub use voice::VoiceNetwork;

/// An SMS as handed to a network.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutboundSms {
    /// The platform's sid, for correlation.
    pub sid: String,
    /// Sender: E.164 number or alphanumeric.
    pub from: String,
    /// Destination, E.164.
    pub to: String,
    /// The text, split into parts.
    pub parts: Vec<String>,
    /// How the parts are encoded.
    pub encoding: Encoding,
    /// Flash SMS (class 0).
    pub flash: bool,
    /// Ties the parts of a multi-part SMS together on the handset: the same on every
    /// submission of the SMS (derived from the SMS, not drawn per try), so a part submitted
    /// again joins the parts taken before it. UDH carries its low 8 bits, SAR all 16.
    pub reference: u16,
}

/// The network took the SMS.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Accepted {
    /// The network's ids, one per part, to match delivery receipts.
    pub message_ids: Vec<String>,
    /// The network (connector) that took it, to match its receipts.
    pub network: String,
}

/// The network refused the SMS.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejected {
    /// Retrying will not help (the SMS ends in `error`); otherwise it is retried later.
    pub permanent: bool,
    /// What the network said.
    pub reason: String,
}

/// A boxed future, so carriers can be held as trait objects.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A network that carries SMS.
pub trait Carrier: Send + Sync + 'static {
    /// Stable name of this carrier (stored with each SMS it carries).
    fn name(&self) -> &str;

    /// Hands part `part` (1-based) of an SMS to the network; resolves with the network's id
    /// of that part. Whatever happens, the answer comes by `until`: a part that cannot be put
    /// on the wire early enough to be answered by then is refused for now instead (so the
    /// lease the platform holds on the SMS covers its submission, and no other node submits
    /// the same part meanwhile).
    fn submit_part<'a>(
        &'a self,
        sms: &'a OutboundSms,
        part: usize,
        until: Instant,
    ) -> BoxFuture<'a, Result<String, Rejected>>;

    /// For networks that answer a submission without any I/O (the simulator): the answer,
    /// given at once, so the SMS worker records it in the transaction that took the SMS
    /// instead of leasing it, submitting, and recording the answer in a second one. Networks
    /// behind a connection answer None and are [`Carrier::submit`]ted.
    fn submit_now(&self, sms: &OutboundSms) -> Option<Result<Accepted, Rejected>> {
        let _ = sms;
        None
    }

    /// For networks whose progression is known in advance (the simulator): the status that
    /// follows `current` for an SMS to `to`, and how many milliseconds later. Real networks
    /// answer None: their statuses arrive as delivery receipts.
    fn next_status(&self, to: &str, current: SmsStatus) -> Option<(SmsStatus, i64)> {
        let _ = (to, current);
        None
    }
}
