//! Counters of the media of every leg of a node, read by `/metrics` and the voice
//! benchmark: packets sent and how many left late, packets received, lost and late.

use std::sync::atomic::{AtomicU64, Ordering};

/// The node's media counters (shared by its legs).
#[derive(Debug, Default)]
pub struct MediaStats {
    sent: AtomicU64,
    sent_late: AtomicU64,
    received: AtomicU64,
    lost: AtomicU64,
    late: AtomicU64,
    legs: AtomicU64,
    legs_total: AtomicU64,
}

/// A reading of [`MediaStats`].
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct MediaCounters {
    /// RTP packets sent.
    pub sent: u64,
    /// Packets sent 10 ms or more after their turn (the node's clock fell behind).
    pub sent_late: u64,
    /// RTP packets received.
    pub received: u64,
    /// Frames with no packet at their turn.
    pub lost: u64,
    /// Packets that arrived after their turn.
    pub late: u64,
    /// Legs with media now.
    pub legs: u64,
    /// Legs with media since the start.
    pub legs_total: u64,
}

impl MediaStats {
    /// A reading of every counter.
    pub fn read(&self) -> MediaCounters {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        MediaCounters {
            sent: get(&self.sent),
            sent_late: get(&self.sent_late),
            received: get(&self.received),
            lost: get(&self.lost),
            late: get(&self.late),
            legs: get(&self.legs),
            legs_total: get(&self.legs_total),
        }
    }

    pub(super) fn leg_started(&self) {
        self.legs.fetch_add(1, Ordering::Relaxed);
        self.legs_total.fetch_add(1, Ordering::Relaxed);
    }

    pub(super) fn leg_ended(&self) {
        self.legs.fetch_sub(1, Ordering::Relaxed);
    }

    pub(super) fn add(&self, sent: u64, sent_late: u64, received: u64, lost: u64, late: u64) {
        for (counter, n) in [
            (&self.sent, sent),
            (&self.sent_late, sent_late),
            (&self.received, received),
            (&self.lost, lost),
            (&self.late, late),
        ] {
            if n > 0 {
                counter.fetch_add(n, Ordering::Relaxed);
            }
        }
    }
}
