//! The receive jitter buffer: RTP packets arrive late, early, twice or never; the leg takes
//! one frame every 20 ms. Packets are held by extended sequence number until `depth` of
//! them are buffered, then played out in order, one per tick; a missing packet is a gap
//! (counted lost, concealed by the caller), one that comes after its turn is counted late
//! and dropped, a duplicate is dropped, and a buffer that grew past `max_depth` (the far
//! end sent a burst, or our clock fell behind) drops its oldest packets to catch up. A new
//! SSRC, or a jump in sequence numbers, starts the stream over.

use std::collections::BTreeMap;

/// Counters of what the buffer saw.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct JitterStats {
    /// Packets taken in.
    pub received: u64,
    /// Frames that had no packet at their turn.
    pub lost: u64,
    /// Packets that arrived after their turn.
    pub late: u64,
    /// Packets received twice.
    pub duplicate: u64,
    /// Packets dropped to bring a grown buffer back to its depth.
    pub dropped: u64,
}

/// A packet's payload waiting for its turn.
#[derive(Debug)]
struct Held {
    payload: Vec<u8>,
    timestamp: u32,
}

/// Packets of one stream, in order.
#[derive(Debug)]
pub struct JitterBuffer {
    depth: usize,
    max_depth: usize,
    held: BTreeMap<u64, Held>,
    ssrc: Option<u32>,
    /// The highest extended sequence number seen.
    highest: Option<u64>,
    /// The next extended sequence number to play; None until the buffer has filled.
    next: Option<u64>,
    /// Gaps in a row (a stream that restarted elsewhere is caught again).
    misses: u32,
    stats: JitterStats,
}

/// A sequence jump larger than this starts the stream over.
const RESTART_JUMP: u64 = 1000;

impl JitterBuffer {
    /// A buffer that holds `depth` packets before playing (40 ms at 2) and at most
    /// `max_depth`.
    pub fn new(depth: usize, max_depth: usize) -> Self {
        Self {
            depth: depth.max(1),
            max_depth: max_depth.max(depth + 1),
            held: BTreeMap::new(),
            ssrc: None,
            highest: None,
            next: None,
            misses: 0,
            stats: JitterStats::default(),
        }
    }

    /// What the buffer saw so far.
    pub fn stats(&self) -> JitterStats {
        self.stats
    }

    /// Starts the counters over (the leg adds them to the node's as it goes).
    pub fn reset_stats(&mut self) {
        self.stats = JitterStats::default();
    }

    /// The extended form of a 16-bit sequence number, closest to the highest seen (the
    /// first packet starts one cycle up, so packets reordered before it still fit).
    fn extend(&self, seq: u16) -> u64 {
        let Some(highest) = self.highest else {
            return (1 << 16) | u64::from(seq);
        };
        let candidate = (highest & !0xFFFF) | u64::from(seq);
        if candidate + 0x8000 < highest {
            candidate + 0x1_0000
        } else if candidate > highest + 0x8000 && candidate >= 0x1_0000 {
            candidate - 0x1_0000
        } else {
            candidate
        }
    }

    fn restart(&mut self) {
        self.held.clear();
        self.highest = None;
        self.next = None;
        self.misses = 0;
    }

    /// Takes a packet.
    pub fn push(&mut self, ssrc: u32, seq: u16, timestamp: u32, payload: &[u8]) {
        if self.ssrc != Some(ssrc) {
            self.ssrc = Some(ssrc);
            self.restart();
        }
        let mut ext = self.extend(seq);
        if let Some(highest) = self.highest
            && ext.abs_diff(highest) > RESTART_JUMP
        {
            self.restart();
            ext = self.extend(seq);
        }
        self.stats.received += 1;
        if self.next.is_some_and(|next| ext < next) {
            self.stats.late += 1;
            return;
        }
        if self.held.contains_key(&ext) {
            self.stats.duplicate += 1;
            return;
        }
        self.highest = Some(self.highest.map_or(ext, |h| h.max(ext)));
        self.held.insert(
            ext,
            Held {
                payload: payload.to_vec(),
                timestamp,
            },
        );
        while self.held.len() > self.max_depth {
            if let Some((&oldest, _)) = self.held.first_key_value() {
                self.held.remove(&oldest);
                self.stats.dropped += 1;
                if let Some(next) = self.next.as_mut() {
                    *next = (*next).max(oldest + 1);
                }
            }
        }
    }

    /// The frame of this tick: the payload and RTP timestamp of the packet whose turn it
    /// is; None while the buffer fills, or for a lost packet (the caller conceals it).
    pub fn pop(&mut self) -> Option<(Vec<u8>, u32)> {
        let next = match self.next {
            Some(next) => next,
            None => {
                if self.held.len() < self.depth {
                    return None;
                }
                *self.held.first_key_value()?.0
            }
        };
        match self.held.remove(&next) {
            Some(held) => {
                self.next = Some(next + 1);
                self.misses = 0;
                Some((held.payload, held.timestamp))
            }
            None if self.held.is_empty() && self.next.is_some() => {
                // Nothing buffered at all: the far end paused (or stopped); wait for it
                // to fill again instead of counting silence as loss.
                self.next = None;
                None
            }
            None => {
                self.stats.lost += 1;
                self.misses += 1;
                self.next = Some(next + 1);
                if self.misses > 50 {
                    // A second of gaps with packets buffered ahead: play from them.
                    self.next = self.held.first_key_value().map(|(&k, _)| k);
                    self.misses = 0;
                }
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn play(buf: &mut JitterBuffer, ticks: usize) -> Vec<Option<u8>> {
        (0..ticks).map(|_| buf.pop().map(|(p, _)| p[0])).collect()
    }

    #[test]
    fn reordered_packets_play_in_order() {
        let mut b = JitterBuffer::new(2, 10);
        for seq in [10u16, 12, 11, 13] {
            b.push(7, seq, u32::from(seq) * 160, &[seq as u8]);
        }
        assert_eq!(play(&mut b, 4), [Some(10), Some(11), Some(12), Some(13)]);
        assert_eq!(b.stats().lost, 0);
    }

    #[test]
    fn gaps_late_and_duplicates_are_counted() {
        let mut b = JitterBuffer::new(2, 10);
        b.push(7, 1, 0, &[1]);
        b.push(7, 2, 160, &[2]);
        b.push(7, 2, 160, &[2]);
        b.push(7, 4, 480, &[4]);
        assert_eq!(play(&mut b, 3), [Some(1), Some(2), None]);
        b.push(7, 3, 320, &[3]);
        assert_eq!(play(&mut b, 1), [Some(4)]);
        let s = b.stats();
        assert_eq!((s.lost, s.late, s.duplicate), (1, 1, 1));
    }

    #[test]
    fn sequence_numbers_wrap() {
        let mut b = JitterBuffer::new(2, 10);
        for (i, seq) in [65534u16, 65535, 0, 1].into_iter().enumerate() {
            b.push(7, seq, i as u32 * 160, &[i as u8]);
        }
        assert_eq!(play(&mut b, 4), [Some(0), Some(1), Some(2), Some(3)]);
        assert_eq!(b.stats().lost, 0);
    }

    #[test]
    fn a_burst_is_cut_back_and_a_new_stream_starts_over() {
        let mut b = JitterBuffer::new(2, 5);
        for seq in 0u16..20 {
            b.push(7, seq, u32::from(seq) * 160, &[seq as u8]);
        }
        assert_eq!(b.stats().dropped, 15);
        assert_eq!(play(&mut b, 1), [Some(15)]);
        // A new SSRC (a re-INVITE, a transfer): its own numbering.
        b.push(9, 500, 0, &[50]);
        b.push(9, 501, 160, &[51]);
        assert_eq!(play(&mut b, 2), [Some(50), Some(51)]);
        // A jump within the stream.
        b.push(9, 30_000, 0, &[60]);
        b.push(9, 30_001, 160, &[61]);
        assert_eq!(play(&mut b, 2), [Some(60), Some(61)]);
    }

    #[test]
    fn a_pause_is_not_loss() {
        let mut b = JitterBuffer::new(2, 10);
        b.push(7, 1, 0, &[1]);
        b.push(7, 2, 160, &[2]);
        assert_eq!(play(&mut b, 5), [Some(1), Some(2), None, None, None]);
        b.push(7, 3, 320, &[3]);
        b.push(7, 4, 480, &[4]);
        assert_eq!(play(&mut b, 2), [Some(3), Some(4)]);
        assert_eq!(b.stats().lost, 0);
    }
}
