//! How many SMS the worker takes in one transaction: few while requests share the writer,
//! many when it is alone or when its work is running late.

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
/// p99 is 4-5 ms (docs/benchmarks.md, 2026-11-28). Heavier loads are [`LATE_MS`]'s.
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
/// How late the oldest SMS of the last tick may have been past its due time before the
/// worker takes [`BATCH_ALONE`] even while requests share the writer. Without it a client
/// load of 64 connections or more left the worker so small a share that 89-98% of the SMS
/// accepted during the load had not moved when it ended: none reached their network, and,
/// the queue then being taken in due order (before migration 0031), one account's burst
/// held every other account's SMS behind it (another account's SMS took 14-16 s to be
/// delivered during a 12 s burst). Past this
/// the moves take the writer's time they need and the accepted rate falls to what they
/// keep up with. Each move of an SMS may wait about this long behind other SMS: with 1,000
/// ms the other account's SMS took 5.2 s, with 250 ms 2.2 s, with 100 ms 1.65 s (its
/// timetable is 0.6 s) for the same accepted rate; a low limit also catches up in small
/// steps, where 1,000 ms let a backlog build at 8 connections and cleared it in ticks that
/// raised p99 from 5 to 11-20 ms (docs/benchmarks.md).
const LATE_MS: i64 = 100;
/// Sizes the worker's transactions: [`BATCH_ALONE`] while its work runs more than
/// [`LATE_MS`] late; otherwise [`BATCH_SHARED`] while other writes are in flight, or were
/// at a tick of the last [`SHARED_FOR_MS`], and [`BATCH_ALONE`] when they were not.
#[derive(Debug, Default)]
pub struct Pacing {
    /// When a tick last saw more than [`BUSY_WRITES`] other writes in flight (Unix ms; 0:
    /// never).
    busy_at: AtomicI64,
    /// How late the oldest SMS the last tick claimed was past its due time (ms; 0 when it
    /// claimed none).
    late_ms: AtomicI64,
}

impl Pacing {
    /// The most SMS the tick at `now` handles, given the writes in flight.
    pub fn batch(&self, writes_in_flight: usize, now: Timestamp) -> i64 {
        let shared = if writes_in_flight > BUSY_WRITES {
            self.busy_at.store(now.millis(), Ordering::Relaxed);
            true
        } else {
            let busy_at = self.busy_at.load(Ordering::Relaxed);
            busy_at != 0 && now.millis() - busy_at < SHARED_FOR_MS
        };
        if shared && self.late_ms.load(Ordering::Relaxed) <= LATE_MS {
            BATCH_SHARED
        } else {
            BATCH_ALONE
        }
    }

    /// Notes how late the tick at `now` found its work: `oldest_due`, the earliest due time
    /// among the SMS it claimed (`None`: it claimed none).
    pub fn note_claimed(&self, oldest_due: Option<Timestamp>, now: Timestamp) {
        let late = oldest_due.map_or(0, |due| (now.millis() - due.millis()).max(0));
        self.late_ms.store(late, Ordering::Relaxed);
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

    #[test]
    fn work_running_late_takes_the_large_batch_even_under_a_load() {
        let pacing = Pacing::default();
        let t = Timestamp::from_millis(1_800_000_000_000);
        pacing.note_claimed(Some(t.plus_ms(-LATE_MS)), t);
        assert_eq!(pacing.batch(64, t), BATCH_SHARED, "at the limit: shared");
        pacing.note_claimed(Some(t.plus_ms(-LATE_MS - 1)), t);
        assert_eq!(pacing.batch(64, t), BATCH_ALONE, "late: its share grows");
        // Still late right after a busy tick: large, and the busy window is still noted.
        assert_eq!(pacing.batch(0, t.plus_ms(1)), BATCH_ALONE);
        // Caught up: back to the shared batch while the load lasts.
        pacing.note_claimed(Some(t.plus_ms(2)), t.plus_ms(2));
        assert_eq!(pacing.batch(0, t.plus_ms(3)), BATCH_SHARED);
        pacing.note_claimed(None, t.plus_ms(4));
        assert_eq!(pacing.batch(64, t.plus_ms(4)), BATCH_SHARED);
        // Due in the future (a clock a node ahead set): not late.
        pacing.note_claimed(Some(t.plus_ms(10_000)), t.plus_ms(5));
        assert_eq!(pacing.batch(64, t.plus_ms(5)), BATCH_SHARED);
    }
}
