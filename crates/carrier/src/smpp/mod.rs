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
mod event;
mod health;
mod pacing;
pub mod receipt;
mod session;
mod submit;
pub mod text;

pub use config::{BindMode, Concatenation, SmppConfig};
pub use connector::Smpp;
pub use event::{Ack, CarrierEvent};
pub use health::BindHealth;
pub use receipt::Receipt;
pub use session::SessionError;
