//! How many SMS the worker takes in one transaction: few while requests share the writer,
//! many when it is alone.

use std::sync::atomic::{AtomicI64, Ordering};

use dialtone_domain::Timestamp;

/// Most SMS handled per transaction while other writes are in flight (requests, as a rule;
/// see [`Pacing`]).
/// The worker's transaction holds the single SQLite writer and every request queued behind
/// it waits; the worker loops at once while work is due, so its batch sets its share of the
/// writer. With 100 moves a tick it took half the writer's time under an SMS load and the
/// accepted rate stayed at 35% of ping. With 25, at 8 connections, the moves fell behind
/// (4-23% of the SMS of a 20-30 s load not yet delivered at its end) and p99 rose to 7 ms;
/// with 50 they keep up (only the last 0.6 s of SMS in flight), 5% more SMS are accepted and
/// p99 is 4-5 ms, while at 64 connections 50 still accepts 1.3-1.6 times Kannel's rate,
/// where 100 gave up a fifth of it (docs/benchmarks.md, 2026-11-28).
const BATCH_SHARED: i64 = 50;
/// Most SMS handled per transaction when no other write waits: statuses catch up after a
/// burst in fewer, larger commits.
const BATCH_ALONE: i64 = 250;
/// Other writes in flight above which the writer counts as shared: the other workers' loop
/// has a few at a time, a client load dozens.
const BUSY_WRITES: usize = 4;
/// How long after a tick saw the writer shared the worker keeps to [`BATCH_SHARED`]: the
/// count of writes in flight is read once a tick, right after the tick's own commit
/// answered the requests committed with it, so under a client load it reads low now and
/// then (a tenth of the ticks of a 64-connection SMS load took [`BATCH_ALONE`] SMS, a third
/// of the worker's moves, each holding the writer for milliseconds).
const SHARED_FOR_MS: i64 = 100;
/// Sizes the worker's transactions: [`BATCH_SHARED`] while other writes are in flight, or
/// were at a tick of the last [`SHARED_FOR_MS`]; [`BATCH_ALONE`] otherwise.
#[derive(Debug, Default)]
pub struct Pacing {
    /// When a tick last saw more than [`BUSY_WRITES`] other writes in flight (Unix ms; 0:
    /// never).
    busy_at: AtomicI64,
}

impl Pacing {
    /// The most SMS the tick at `now` handles, given the writes in flight.
    pub fn batch(&self, writes_in_flight: usize, now: Timestamp) -> i64 {
        if writes_in_flight > BUSY_WRITES {
            self.busy_at.store(now.millis(), Ordering::Relaxed);
            return BATCH_SHARED;
        }
        let busy_at = self.busy_at.load(Ordering::Relaxed);
        if busy_at != 0 && now.millis() - busy_at < SHARED_FOR_MS {
            BATCH_SHARED
        } else {
            BATCH_ALONE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_batch_stays_shared_for_a_while_after_the_writer_was_busy() {
        let pacing = Pacing::default();
        let t = Timestamp::from_millis(1_800_000_000_000);
        assert_eq!(pacing.batch(0, t), BATCH_ALONE, "never busy");
        assert_eq!(
            pacing.batch(BUSY_WRITES, t),
            BATCH_ALONE,
            "at the threshold"
        );
        assert_eq!(pacing.batch(BUSY_WRITES + 1, t), BATCH_SHARED);
        // A tick right after a commit reads few writes in flight: still shared.
        assert_eq!(pacing.batch(0, t.plus_ms(SHARED_FOR_MS - 1)), BATCH_SHARED);
        assert_eq!(pacing.batch(0, t.plus_ms(SHARED_FOR_MS)), BATCH_ALONE);
        // Busy again: the window starts over from the last busy tick.
        assert_eq!(pacing.batch(64, t.plus_ms(500)), BATCH_SHARED);
        assert_eq!(pacing.batch(1, t.plus_ms(550)), BATCH_SHARED);
        assert_eq!(pacing.batch(1, t.plus_ms(600)), BATCH_ALONE);
    }
}
