//! The real voice network of dialtone: SIP trunks carry calls to and from carriers, PBXs or
//! phones, and RTP carries their audio, so the same Actions scenarios that run in the
//! sandbox run on real calls.
//!
//! - [`sdp`]: the offer/answer of one G.711 audio stream with telephone-events.
//! - [`media`]: a task per call leg with a 20 ms clock (G.711, RFC 4733 telephone-events,
//!   in-band DTMF, jitter buffer, prompts, recordings, bridging).
//! - [`node`]: the node's SIP endpoint, its trunks and the calls it carries; each trunk is a
//!   [`dialtone_carrier::VoiceNetwork`] of the platform.
//! - [`platform`]: what the network asks of the platform.

mod auth;
mod call;
pub mod cause;
pub mod config;
mod early_offer;
mod inbound;
pub mod media;
mod network;
mod node;
mod outbound;
pub mod platform;
mod prompt;
mod registration;
pub mod sdp;
mod startup;
mod trunk;

pub use config::{NodeConfig, TrunkConfig};
pub use node::{SipNode, StartError, TrunkStatus};
pub use platform::{Admission, IncomingCall, Platform, Refusal, Spoken};
pub use prompt::{FirstAudioSummary, FirstAudioView};
pub use trunk::TrunkHealth;
