//! When each `submit_sm` of a connector may leave: at most the configured throughput, and
//! slower while the SMSC says `ESME_RTHROTTLED`.
//!
//! Throttling widens the gap between two submits (doubling from 20 ms up to 2 s, and pausing
//! every submit for that long at once); each accepted submit narrows it again by an eighth,
//! so the connector finds the pace the SMSC accepts instead of waiting a flat time.

use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

/// The first gap after a throttle.
const THROTTLE_MIN: Duration = Duration::from_millis(20);
/// The widest gap.
const THROTTLE_MAX: Duration = Duration::from_secs(2);

/// The slots of one connector.
#[derive(Debug)]
pub(crate) struct Pacer {
    /// The gap of the configured throughput (zero: no limit).
    step: Duration,
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    /// The next free slot.
    next: Instant,
    /// The gap the SMSC's throttling added.
    throttle: Duration,
}

impl Pacer {
    /// Slots `1 / per_second` apart (0: no limit).
    pub(crate) fn new(per_second: u32) -> Self {
        let step = if per_second == 0 {
            Duration::ZERO
        } else {
            Duration::from_secs(1) / per_second
        };
        Self {
            step,
            state: Mutex::new(State {
                next: Instant::now(),
                throttle: Duration::ZERO,
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Takes the next slot, if it comes by `latest` (else nothing is taken).
    pub(crate) fn reserve(&self, latest: Instant) -> Option<Instant> {
        let mut state = self.lock();
        let slot = state.next.max(Instant::now());
        if slot > latest {
            return None;
        }
        state.next = slot + self.step.max(state.throttle);
        Some(slot)
    }

    /// The SMSC said `ESME_RTHROTTLED`: widen the gap and hold every submit for it.
    pub(crate) fn throttled(&self) {
        let mut state = self.lock();
        state.throttle = (state.throttle * 2).clamp(THROTTLE_MIN, THROTTLE_MAX);
        let resume = Instant::now() + state.throttle;
        state.next = state.next.max(resume);
    }

    /// A submit was accepted: narrow the throttling gap.
    pub(crate) fn accepted(&self) {
        let mut state = self.lock();
        if state.throttle.is_zero() {
            return;
        }
        let narrowed = state.throttle - state.throttle / 8;
        state.throttle = narrowed;
        if state.throttle < Duration::from_millis(1) {
            state.throttle = Duration::ZERO;
        }
    }

    /// The gap throttling adds now (zero when the SMSC is content).
    pub(crate) fn throttle(&self) -> Duration {
        self.lock().throttle
    }

    /// The gap of the configured throughput.
    pub(crate) fn step(&self) -> Duration {
        self.step
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn throughput_spaces_the_slots() {
        let pacer = Pacer::new(100);
        let far = Instant::now() + Duration::from_secs(60);
        let a = pacer.reserve(far).unwrap();
        let b = pacer.reserve(far).unwrap();
        assert_eq!(b - a, Duration::from_millis(10));
        // A slot past the deadline is not taken.
        assert!(pacer.reserve(Instant::now()).is_none());
        assert_eq!(pacer.reserve(far).unwrap() - b, Duration::from_millis(10));
    }

    #[tokio::test(start_paused = true)]
    async fn throttling_widens_then_recovers() {
        let pacer = Pacer::new(0);
        let far = Instant::now() + Duration::from_secs(60);
        let start = Instant::now();
        assert_eq!(pacer.reserve(far), Some(start), "no limit, no wait");
        pacer.throttled();
        assert_eq!(pacer.throttle(), THROTTLE_MIN);
        assert_eq!(pacer.reserve(far), Some(start + THROTTLE_MIN), "held");
        pacer.throttled();
        pacer.throttled();
        assert_eq!(pacer.throttle(), THROTTLE_MIN * 4);
        for _ in 0..20 {
            pacer.throttled();
        }
        assert_eq!(pacer.throttle(), THROTTLE_MAX, "bounded");
        for _ in 0..80 {
            pacer.accepted();
        }
        assert_eq!(pacer.throttle(), Duration::ZERO, "back to full speed");
    }
}
