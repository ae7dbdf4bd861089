//! What the connector tells the platform: receipts and inbound SMS, each with the answer
//! its SMSC waits for.

use super::receipt::Receipt;
use super::{session, text};
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
pub struct Ack(pub(super) Vec<session::Answer>);

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
