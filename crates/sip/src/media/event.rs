//! The units of a leg's media: 20 ms frames of 8 kHz samples, shared audio to play, and
//! what a leg reports.

use std::sync::Arc;

use dialtone_carrier::voice::PlayTag;

/// Samples per 20 ms frame at 8 kHz.
pub const FRAME: usize = 160;

/// Audio to play: 8 kHz mono 16-bit samples, shared by every call playing it.
pub type Pcm = Arc<[i16]>;

/// What a leg's media reports.
#[derive(Debug, Clone, PartialEq)]
pub enum MediaEvent {
    /// The far end pressed a key (telephone-event or in-band tone).
    Digit(char),
    /// A prompt that was given a tag finished playing (or was cut by barge-in or a hangup).
    Played(PlayTag),
    /// The far end sent no RTP for the media timeout (and did not put the call on hold):
    /// it is gone.
    Silent,
    /// A voicemail recording ended (its longest duration or its finish key): what the far
    /// end said. One in progress when the leg closes is in [`Closed`] instead.
    Recorded(Vec<i16>),
}
