//! What a leg sends, frame by frame: the prompts queued on it (each reported when done),
//! else the audio relayed from the bridged leg, else silence; and the keys to send, as
//! telephone-events or, for a far end without them, as tones in the audio.

use std::collections::VecDeque;

use dialtone_carrier::voice::PlayTag;

use super::event::{FRAME, Pcm};
use super::inband;
use super::telephone_event::EventSender;

/// Most relayed audio held (100 ms): a bridge never builds up delay.
const MAX_RELAY: usize = FRAME * 5;
/// A key sent as a telephone-event lasts 100 ms.
const EVENT_FRAMES: u16 = 5;

/// A prompt being played.
#[derive(Debug)]
struct Playing {
    pcm: Pcm,
    at: usize,
    tag: Option<PlayTag>,
    /// A key stops it (the prompt of a gather).
    barge_in: bool,
}

/// One frame to send.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Frame {
    /// Audio.
    Audio,
    /// A telephone-event payload (and the RTP marker).
    Event([u8; 4], bool),
}

/// The sending side of a leg.
#[derive(Debug, Default)]
pub(super) struct Outgoing {
    queue: VecDeque<Playing>,
    relay: VecDeque<i16>,
    keys: VecDeque<char>,
    event: Option<EventSender>,
    /// Tones of keys for a far end without telephone-events.
    tones: VecDeque<i16>,
}

impl Outgoing {
    /// Queues a prompt.
    pub(super) fn play(&mut self, pcm: Pcm, tag: Option<PlayTag>) {
        self.queue.push_back(Playing {
            pcm,
            at: 0,
            tag,
            barge_in: false,
        });
    }

    /// The prompts queued now stop at the next key.
    pub(super) fn arm_barge_in(&mut self) {
        for p in &mut self.queue {
            p.barge_in = true;
        }
    }

    /// A key was pressed: the prompts it interrupts stop; their tags.
    pub(super) fn barge_in(&mut self) -> Vec<PlayTag> {
        let mut done = Vec::new();
        self.queue.retain(|p| {
            if p.barge_in {
                done.extend(p.tag);
                false
            } else {
                true
            }
        });
        done
    }

    /// Stops everything queued; the tags of the prompts cut short.
    pub(super) fn clear(&mut self) -> Vec<PlayTag> {
        self.queue.drain(..).filter_map(|p| p.tag).collect()
    }

    /// Nothing is being played.
    pub(super) fn idle(&self) -> bool {
        self.queue.is_empty()
    }

    /// Audio from the bridged leg.
    pub(super) fn relay(&mut self, samples: &[i16]) {
        self.relay.extend(samples);
        if self.relay.len() > MAX_RELAY {
            let excess = self.relay.len() - MAX_RELAY;
            self.relay.drain(..excess);
        }
    }

    /// A key to send to the far end.
    pub(super) fn send_key(&mut self, key: char, telephone_events: bool) {
        if telephone_events {
            self.keys.push_back(key);
        } else if let Some(t) = inband::tone(key, 100) {
            self.tones.extend(t);
        }
    }

    /// The next frame: a telephone-event packet, or audio written into `frame`; the tags of
    /// prompts that ended with it go to `played`.
    pub(super) fn next(&mut self, frame: &mut [i16; FRAME], played: &mut Vec<PlayTag>) -> Frame {
        if self.event.is_none()
            && let Some(key) = self.keys.pop_front()
        {
            self.event = EventSender::new(key, EVENT_FRAMES);
        }
        if let Some(sender) = self.event.as_mut() {
            match sender.next_packet() {
                Some((payload, marker)) => return Frame::Event(payload, marker),
                None => self.event = None,
            }
        }
        frame.fill(0);
        let mut filled = 0;
        while filled < FRAME {
            let Some(p) = self.queue.front_mut() else {
                break;
            };
            let n = (FRAME - filled).min(p.pcm.len() - p.at);
            frame[filled..filled + n].copy_from_slice(&p.pcm[p.at..p.at + n]);
            filled += n;
            p.at += n;
            if p.at >= p.pcm.len()
                && let Some(done) = self.queue.pop_front()
            {
                played.extend(done.tag);
            }
        }
        if filled == 0 {
            // Nothing played: the bridged leg's audio.
            let n = self.relay.len().min(FRAME);
            for (slot, s) in frame.iter_mut().zip(self.relay.drain(..n)) {
                *slot = s;
            }
        } else {
            self.relay.clear();
        }
        if !self.tones.is_empty() {
            let n = self.tones.len().min(FRAME);
            for (slot, t) in frame.iter_mut().zip(self.tones.drain(..n)) {
                *slot = slot.saturating_add(t);
            }
        }
        Frame::Audio
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tag(fiber: u32) -> PlayTag {
        PlayTag { run: 1, fiber }
    }

    #[test]
    fn prompts_play_in_turn_and_report_their_end() {
        let mut o = Outgoing::default();
        o.play(vec![1; 200].into(), Some(tag(1)));
        o.play(vec![2; 100].into(), Some(tag(2)));
        let mut frame = [0; FRAME];
        let mut played = Vec::new();
        assert_eq!(o.next(&mut frame, &mut played), Frame::Audio);
        assert!(frame.iter().all(|&s| s == 1));
        assert!(played.is_empty());
        o.next(&mut frame, &mut played);
        // 40 samples of the first, then the whole second.
        assert_eq!((frame[39], frame[40], frame[139], frame[140]), (1, 2, 2, 0));
        assert_eq!(played, [tag(1), tag(2)]);
        assert!(o.idle());
    }

    #[test]
    fn a_key_cuts_the_armed_prompts_only() {
        let mut o = Outgoing::default();
        o.play(vec![1; 8000].into(), Some(tag(1)));
        o.arm_barge_in();
        o.play(vec![2; 8000].into(), Some(tag(2)));
        assert_eq!(o.barge_in(), [tag(1)]);
        assert_eq!(o.clear(), [tag(2)]);
    }

    #[test]
    fn relayed_audio_fills_silence_and_keys_go_out_as_events_or_tones() {
        let mut o = Outgoing::default();
        o.relay(&[5; 2000]);
        let mut frame = [0; FRAME];
        let mut played = Vec::new();
        o.next(&mut frame, &mut played);
        assert!(frame.iter().all(|&s| s == 5));
        assert_eq!(o.relay.len(), MAX_RELAY - FRAME, "at most 100 ms is kept");
        o.send_key('#', true);
        let events: Vec<_> = (0..8).map(|_| o.next(&mut frame, &mut played)).collect();
        assert!(matches!(events[0], Frame::Event(_, true)));
        assert!(
            events[1..8]
                .iter()
                .all(|f| matches!(f, Frame::Event(_, false)))
        );
        assert_eq!(o.next(&mut frame, &mut played), Frame::Audio);
        let mut o = Outgoing::default();
        o.send_key('5', false);
        o.next(&mut frame, &mut played);
        assert!(frame.iter().any(|&s| s.abs() > 1000), "a tone in the audio");
    }
}
