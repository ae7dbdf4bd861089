//! The SMS this node knows to be due, and when: the worker claims them by id, and walks the
//! due index only now and then, for the rest.
//!
//! Every status move of an SMS changes when it is next due, so on PostgreSQL each leaves a
//! dead entry in the due index (now `sms_state_due`, migration 0036; `sms_queue_account_due`
//! before it, `sms_queue_due` before 0031, and `sms_due`, on `sms` itself, before 0029), and
//! the claim that walks
//! the index from its head (`ORDER BY due_at`) stepped over every entry the moves left since
//! the last vacuum: 15,459 buffers and 10.5 ms to find nothing due after one benchmark, the
//! costliest statement of the run. The node knows most of its due work without that walk: the SMS it
//! accepted (due at once) and the next steps its worker scheduled. Those are kept here and
//! claimed through the primary key (`sms::due_among`). The walk (`sms::due`) still finds
//! everything else: the SMS of other nodes and of a node that stopped, the retries and
//! leases other paths schedule, hints dropped at [`CAPACITY`]; it runs when the hints have
//! nothing due, and at least every [`SCAN_EVERY_MS`] otherwise. A hint is only a hint: the
//! claim checks `next_at` in the database, and an SMS moved meanwhile is not claimed by it.
//!
//! On SQLite a deleted index entry is gone at once, so the walk costs nothing extra and the
//! hints are off: measured on, they cost 7% of the end-to-end rate there.
//!
//! Both are shared among accounts: the walk visits the accounts with queued SMS in turn
//! (`sms_queue::due_ids`), and the hints are kept by account and taken one of each account
//! in turn ([`DueHints::take_due`]), so one account's backlog does not hold another's SMS
//! behind it. While a walk is due the hints take half the batch at most
//! ([`DueHints::hint_limit`]): the walk is what reaches the SMS this node has no hints of.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

use dialtone_domain::Timestamp;

/// Most hints kept (16 bytes each, and an entry per account); past it new ones are dropped,
/// and the walk finds them.
pub(crate) const CAPACITY: usize = 200_000;
/// Longest time between two walks of the due index while hints keep the worker busy: how
/// late work this node has no hint of can be.
pub(crate) const SCAN_EVERY_MS: i64 = 250;

/// Each account's hints, soonest first, and whose turn is next.
#[derive(Default)]
struct Hints {
    /// (due at in Unix ms, SMS id) of each account's SMS, soonest first.
    by_account: HashMap<i64, BinaryHeap<Reverse<(i64, i64)>>>,
    /// Hints kept, all accounts together.
    len: usize,
    /// The account the last take ended on: the next take starts after it.
    after: i64,
}

/// See the module's documentation.
#[derive(Default)]
pub(crate) struct DueHints {
    /// Hints are kept (PostgreSQL); off, every tick walks the due index.
    on: bool,
    /// The hints, by account.
    hints: Mutex<Hints>,
    /// When the due index was last walked (Unix ms).
    scanned_at: AtomicI64,
    /// The account the last walk visited last (0: none): walks visit the accounts with
    /// queued SMS in turn (`sms_queue::due_ids`), on both databases.
    walk_after: AtomicI64,
}

impl DueHints {
    /// Hints for a node on this database: kept on PostgreSQL only.
    pub(crate) fn for_database(dialect: dialtone_store::Dialect) -> Self {
        Self {
            on: dialect == dialtone_store::Dialect::Postgres,
            ..Self::default()
        }
    }

    /// Notes that SMS `id`, of `account`, is due at `at`.
    pub(crate) fn add(&self, id: i64, account: i64, at: Timestamp) {
        if !self.on {
            return;
        }
        let mut hints = self.lock();
        if hints.len < CAPACITY {
            hints.len += 1;
            hints
                .by_account
                .entry(account)
                .or_default()
                .push(Reverse((at.millis(), id)));
        }
    }

    /// Takes up to `limit` hints due at `now`: one of each account with some in turn
    /// (starting after the account the last take ended on), each account's soonest first,
    /// until `limit` or none is left, as the walk shares its batch (`sms_queue::due_ids`).
    pub(crate) fn take_due(&self, now: Timestamp, limit: usize) -> Vec<i64> {
        let now = now.millis();
        let mut guard = self.lock();
        let hints = &mut *guard;
        let is_due =
            |heap: &BinaryHeap<Reverse<(i64, i64)>>| heap.peek().is_some_and(|h| h.0.0 <= now);
        let mut accounts: Vec<i64> = hints
            .by_account
            .iter()
            .filter(|(_, heap)| is_due(heap))
            .map(|(&account, _)| account)
            .collect();
        accounts.sort_unstable();
        let start = accounts.partition_point(|&a| a <= hints.after);
        accounts.rotate_left(start);
        // Each due account's heap, out of the map while its due hints are taken in turn.
        let mut heaps: Vec<BinaryHeap<Reverse<(i64, i64)>>> = accounts
            .iter()
            .filter_map(|account| hints.by_account.remove(account))
            .collect();
        let mut ids = Vec::new();
        let mut turns: Vec<_> = heaps
            .iter_mut()
            .map(|heap| {
                std::iter::from_fn(move || {
                    if is_due(heap) {
                        heap.pop().map(|Reverse((_, id))| id)
                    } else {
                        None
                    }
                })
            })
            .collect();
        let last = dialtone_store::sms_queue::in_turn(&mut turns, limit, &mut ids)
            .and_then(|i| accounts.get(i).copied());
        drop(turns);
        for (account, heap) in accounts.iter().zip(heaps) {
            if !heap.is_empty() {
                hints.by_account.insert(*account, heap);
            }
        }
        hints.len -= ids.len();
        if let Some(account) = last {
            hints.after = account;
        }
        ids
    }

    /// Whether a walk of the due index is due at `now`: always when hints are off, else
    /// once [`SCAN_EVERY_MS`] passed since the last walk ([`DueHints::walked`]).
    pub(crate) fn walk_due(&self, now: Timestamp) -> bool {
        !self.on || now.millis() - self.scanned_at.load(Ordering::Relaxed) >= SCAN_EVERY_MS
    }

    /// How many hints the tick at `now` takes of its `batch`: all of it, but half while a
    /// walk is due. The walk is what reaches the SMS this node has no hints of (other
    /// nodes', retries other paths schedule, hints dropped at [`CAPACITY`]), so it keeps a
    /// share of the batch (see `sms_queue::due_ids`).
    pub(crate) fn hint_limit(&self, now: Timestamp, batch: usize) -> usize {
        if self.walk_due(now) { batch / 2 } else { batch }
    }

    /// Whether the tick at `now` walks the due index, given the hints it took: when a walk
    /// is due, and always when the hints gave it nothing. Notes the walk.
    pub(crate) fn walk_now(&self, now: Timestamp, hinted: usize) -> bool {
        if !self.walk_due(now) && hinted > 0 {
            return false;
        }
        self.walked(now);
        true
    }

    /// Notes a walk at `now`.
    fn walked(&self, now: Timestamp) {
        self.scanned_at.store(now.millis(), Ordering::Relaxed);
    }

    /// The account the next walk starts after (the last one the previous walk visited).
    pub(crate) fn walk_after(&self) -> i64 {
        self.walk_after.load(Ordering::Relaxed)
    }

    /// Notes where a walk ended.
    pub(crate) fn walk_ended(&self, last_account: i64) {
        self.walk_after.store(last_account, Ordering::Relaxed);
    }

    fn lock(&self) -> MutexGuard<'_, Hints> {
        // A panic while holding the lock leaves valid heaps (at worst `len` counts a hint
        // taken: one fewer kept before `CAPACITY`).
        self.hints.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn due_hints_come_soonest_first_and_the_walk_runs_when_they_run_dry() {
        let off = DueHints::for_database(dialtone_store::Dialect::Sqlite);
        let t = Timestamp::from_millis(1_800_000_000_000);
        off.add(1, 7, t);
        assert_eq!(off.take_due(t, 10), Vec::<i64>::new(), "no hints on SQLite");
        assert!(off.walk_now(t, 0) && off.walk_now(t, 5), "every tick walks");
        let hints = DueHints::for_database(dialtone_store::Dialect::Postgres);
        hints.add(3, 7, t.plus_ms(10));
        hints.add(1, 7, t);
        hints.add(2, 7, t.plus_ms(5));
        assert_eq!(hints.take_due(t.plus_ms(5), 10), [1, 2]);
        assert_eq!(hints.take_due(t.plus_ms(5), 10), Vec::<i64>::new());
        assert_eq!(hints.take_due(t.plus_ms(20), 10), [3]);
        // Nothing hinted: the walk runs, every time.
        assert!(hints.walk_now(t, 0));
        assert!(hints.walk_now(t, 0));
        // Hints keep it busy: the walk waits for its interval.
        assert!(!hints.walk_now(t.plus_ms(SCAN_EVERY_MS - 1), 5));
        assert!(hints.walk_now(t.plus_ms(SCAN_EVERY_MS), 5));
    }

    #[test]
    fn hints_are_taken_one_of_each_account_in_turn() {
        let t = Timestamp::from_millis(1_800_000_000_000);
        let hints = DueHints::for_database(dialtone_store::Dialect::Postgres);
        // Account 5's backlog was due first; accounts 6 and 7 have one each, due after it.
        for id in 1..=10 {
            hints.add(id, 5, t.plus_ms(id));
        }
        hints.add(20, 6, t.plus_ms(50));
        hints.add(30, 7, t.plus_ms(60));
        hints.add(31, 7, t.plus_ms(1_000));
        assert_eq!(hints.take_due(t.plus_ms(100), 4), [1, 20, 30, 2]);
        // The next take starts after the account the last ended on; 7's other hint is not due.
        assert_eq!(hints.take_due(t.plus_ms(100), 3), [3, 4, 5]);
        assert_eq!(hints.take_due(t.plus_ms(100), 100), [6, 7, 8, 9, 10]);
        assert_eq!(hints.take_due(t.plus_ms(100), 100), Vec::<i64>::new());
        assert_eq!(hints.take_due(t.plus_ms(1_000), 100), [31]);
        assert!(
            hints.lock().by_account.is_empty(),
            "emptied accounts are dropped"
        );
        assert_eq!(hints.lock().len, 0);
    }

    #[test]
    fn hints_stop_at_their_capacity() {
        let t = Timestamp::from_millis(1_800_000_000_000);
        let hints = DueHints::for_database(dialtone_store::Dialect::Postgres);
        for id in 0..CAPACITY as i64 + 5 {
            hints.add(id, id % 3, t);
        }
        assert_eq!(hints.lock().len, CAPACITY);
        assert_eq!(hints.take_due(t, 10).len(), 10);
        hints.add(-1, 9, t);
        assert_eq!(hints.lock().len, CAPACITY - 9, "room again after a take");
    }

    #[test]
    fn hints_leave_half_the_batch_to_a_walk_that_is_due() {
        let t = Timestamp::from_millis(1_800_000_000_000);
        let off = DueHints::for_database(dialtone_store::Dialect::Sqlite);
        assert_eq!(off.hint_limit(t, 100), 50, "every tick walks");
        let hints = DueHints::for_database(dialtone_store::Dialect::Postgres);
        assert_eq!(hints.hint_limit(t, 100), 50, "never walked: due");
        assert!(hints.walk_now(t, 50));
        assert_eq!(hints.hint_limit(t.plus_ms(1), 100), 100, "just walked");
        assert_eq!(hints.hint_limit(t.plus_ms(SCAN_EVERY_MS), 100), 50);
        // Where a walk ended is where the next one starts.
        assert_eq!(hints.walk_after(), 0);
        hints.walk_ended(42);
        assert_eq!(hints.walk_after(), 42);
    }
}
