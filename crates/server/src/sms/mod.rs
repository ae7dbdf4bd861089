//! SMS as use cases shared by every interface (v2.0, JSON-RPC, SMS REST v1.1, scenarios):
//! send ([`outgoing`]), receive ([`inbound`]), the status moves of the worker ([`progress`],
//! [`moves`], [`submission`], [`receipts`]) and the events they cause ([`events`]), each in
//! one transaction.

pub(crate) mod carrier_events;
pub(crate) mod due_hints;
pub(crate) mod events;
pub(crate) mod inbound;
pub(crate) mod intake;
pub(crate) mod legacy;
pub(crate) mod moves;
pub(crate) mod outgoing;
pub(crate) mod pacing;
pub(crate) mod progress;
pub(crate) mod receipts;
pub(crate) mod submission;
pub(crate) mod text;

pub(crate) use inbound::receive;
pub(crate) use intake::Outgoing;
pub(crate) use outgoing::{send, send_assumed};
