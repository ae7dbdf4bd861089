//! What a leg records: a voicemail (what the far end says, from after the beep to its
//! longest duration, its finish key, or the end of the call) and the call recording (both
//! directions mixed, to the end of the call). Both are bounded in samples.

use super::event::FRAME;

/// A voicemail being recorded.
#[derive(Debug)]
pub(super) struct Voicemail {
    samples: Vec<i16>,
    max: usize,
    /// The key that ends it.
    pub(super) finish: Option<char>,
    /// Capture starts once the beep (and any prompt before it) played.
    pub(super) capturing: bool,
}

impl Voicemail {
    /// A voicemail of at most `max_ms`.
    pub(super) fn new(max_ms: u64, finish: Option<char>) -> Self {
        let max = usize::try_from(max_ms.saturating_mul(8)).unwrap_or(usize::MAX);
        Self {
            samples: Vec::with_capacity(max.min(8000 * 60)),
            max,
            finish,
            capturing: false,
        }
    }

    /// Takes a frame heard from the far end; true when the recording is full.
    pub(super) fn push(&mut self, frame: &[i16]) -> bool {
        if self.capturing {
            let room = self.max.saturating_sub(self.samples.len());
            self.samples
                .extend_from_slice(&frame[..frame.len().min(room)]);
        }
        self.samples.len() >= self.max
    }

    /// The recorded samples.
    pub(super) fn into_samples(self) -> Vec<i16> {
        self.samples
    }
}

/// The recording of a whole call.
#[derive(Debug)]
pub(super) struct CallRecording {
    samples: Vec<i16>,
    max: usize,
}

impl CallRecording {
    /// A recording of at most `max_ms` (what comes after is not kept).
    pub(super) fn new(max_ms: u64) -> Self {
        Self {
            samples: Vec::with_capacity(8000 * 60),
            max: usize::try_from(max_ms.saturating_mul(8)).unwrap_or(usize::MAX),
        }
    }

    /// Mixes one frame of each direction.
    pub(super) fn push(&mut self, sent: &[i16; FRAME], heard: &[i16; FRAME]) {
        if self.samples.len() >= self.max {
            return;
        }
        self.samples.extend(
            sent.iter()
                .zip(heard)
                .map(|(&a, &b)| (i32::from(a) + i32::from(b)).clamp(-32768, 32767) as i16),
        );
    }

    /// The recorded samples.
    pub(super) fn into_samples(self) -> Vec<i16> {
        self.samples
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_voicemail_keeps_what_came_after_the_beep_up_to_its_length() {
        let mut v = Voicemail::new(50, Some('#'));
        assert!(!v.push(&[1; FRAME]), "not capturing yet");
        v.capturing = true;
        assert!(!v.push(&[2; FRAME]));
        assert!(!v.push(&[3; FRAME]));
        assert!(v.push(&[4; FRAME]), "50 ms = 400 samples");
        let s = v.into_samples();
        assert_eq!(s.len(), 400);
        assert_eq!((s[0], s[399]), (2, 4));
    }

    #[test]
    fn a_call_recording_mixes_and_clips() {
        let mut r = CallRecording::new(1000);
        r.push(&[30000; FRAME], &[10000; FRAME]);
        r.push(&[-5; FRAME], &[7; FRAME]);
        let s = r.into_samples();
        assert_eq!((s[0], s[FRAME]), (32767, 2));
    }
}
