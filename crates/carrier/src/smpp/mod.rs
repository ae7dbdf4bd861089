//! The SMPP 3.4 connector: dialtone as an ESME bound to an operator's SMSC.
//!
//! Outbound, [`Smpp`] implements [`Carrier`](crate::Carrier): each part becomes a `submit_sm`
//! (GSM 03.38 or UCS-2, UDH or SAR concatenation, a delivery receipt asked for), paced by
//! the connector's throughput and window. Inbound, every `deliver_sm` becomes a
//! [`CarrierEvent`] on the channel given to [`Smpp::start`]: a delivery receipt, or an SMS or
//! one part of a concatenated SMS (the server keeps parts in its database until the last one
//! arrives). The `deliver_sm_resp` waits for [`Ack::accept`], so a receipt, SMS or part the
//! platform has not stored yet is delivered again by the SMSC, never lost.
//!
//! Storing statuses and SMS is the server's job; this module owns the protocol only.

mod address;
mod config;
mod connector;
mod delivery;
mod health;
mod pacing;
pub mod receipt;
mod session;
mod submit;
pub mod text;

pub use config::{BindMode, Concatenation, SmppConfig};
pub use connector::Smpp;
pub use health::BindHealth;
pub use receipt::Receipt;
pub use session::SessionError;

use rusmpp::CommandStatus;

/// What an SMSC told the platform.
#[derive(Debug)]
pub enum CarrierEvent {
    /// A delivery receipt for a part the connector submitted.
    Receipt {
        /// The connector it came through.
        connector: String,
        /// What it says.
        receipt: Receipt,
        /// Answer once stored.
        ack: Ack,
    },
    /// An SMS to one of the platform's numbers, or one part of it.
    Inbound {
        /// The connector it came through.
        connector: String,
        /// Sender: E.164 when it is one (international, or national in the connector's
        /// `country`), else as the SMSC wrote it.
        from: String,
        /// Recipient, likewise.
        to: String,
        /// The text (of this part, when `part` is set).
        text: String,
        /// Which part of a concatenated SMS this is (UDH or SAR); None for a whole SMS.
        part: Option<text::PartOf>,
        /// Answer once stored.
        ack: Ack,
    },
}

/// The pending answers of the `deliver_sm` behind an event.
#[derive(Debug, Default)]
pub struct Ack(Vec<session::Answer>);

impl Ack {
    /// The event is stored: the SMSC may forget it.
    pub fn accept(self) {
        for a in self.0 {
            a.send(CommandStatus::EsmeRok);
        }
    }

    /// The event could not be stored now: the SMSC is asked to deliver it again later.
    pub fn retry_later(self) {
        for a in self.0 {
            a.send(CommandStatus::EsmeRxTAppn);
        }
    }
}
