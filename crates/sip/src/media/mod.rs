//! RTP media of SIP calls: one task per call leg, on a UDP port of the node's range, with a
//! 20 ms clock of its own. Each tick it sends one packet (a prompt being played, audio
//! relayed from the bridged leg, a telephone-event, or silence) and takes one frame out of
//! the jitter buffer for what listens to the far end (digit detection, recordings, the
//! bridged leg). What happens on a leg comes back as [`MediaEvent`]s.

mod event;
pub mod g711;
pub mod inband;
pub mod jitter;
mod leg;
mod outgoing;
mod ports;
mod recorder;
mod stats;
pub mod telephone_event;

pub use event::{FRAME, MediaEvent, Pcm};
pub use leg::{Closed, Events, Leg, LegConfig, MediaCommand};
pub use ports::PortPool;
pub use stats::{MediaCounters, MediaStats};
