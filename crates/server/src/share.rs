//! A kind of background work shared fairly between accounts on this node: each account has
//! at most a few items in progress, and a claim leaves out the accounts at their cap, so one
//! account with thousands of due items never keeps the others' waiting. For work that is
//! long and scarce (transcriptions), accounts also take turns: the one served least
//! recently goes first ([`Share::in_turn`]).

use std::collections::HashMap;
use std::sync::Mutex;

use crate::tally::Tally;

/// Items in progress per account, under a cap.
#[derive(Debug)]
pub struct Share {
    cap: usize,
    counts: Mutex<HashMap<i64, usize>>,
    running: Tally,
    /// When each account last started an item (a sequence number), for turns.
    turns: Mutex<Turns>,
}

/// The last start of each account recently served.
#[derive(Debug, Default)]
struct Turns {
    next: u64,
    last: HashMap<i64, u64>,
}

/// Accounts whose last turn is remembered; past this the older half is forgotten (they
/// then count as never served, which only moves them forward).
const MAX_TURNS: usize = 4096;

/// Most accounts a claim leaves out by name (the busiest first).
const MAX_EXCLUDED: usize = 64;

impl Share {
    /// At most `cap` items of one account at once.
    pub fn new(cap: usize) -> Self {
        Self {
            cap: cap.max(1),
            counts: Mutex::default(),
            running: Tally::default(),
            turns: Mutex::default(),
        }
    }

    /// `accounts` in turn order: never served first, then the one served least recently.
    pub fn in_turn(&self, accounts: &mut [i64]) {
        let turns = self.turns.lock().unwrap_or_else(|p| p.into_inner());
        accounts.sort_by_key(|a| turns.last.get(a).copied().unwrap_or(0));
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<i64, usize>> {
        self.counts.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The accounts at their cap, for a claim to leave out.
    pub fn full(&self) -> Vec<i64> {
        let counts = self.lock();
        let mut full: Vec<(i64, usize)> = counts
            .iter()
            .filter(|(_, n)| **n >= self.cap)
            .map(|(a, n)| (*a, *n))
            .collect();
        full.sort_by_key(|(_, n)| std::cmp::Reverse(*n));
        full.into_iter()
            .take(MAX_EXCLUDED)
            .map(|(a, _)| a)
            .collect()
    }

    /// Room of each account now, for a claim's `pick` (a copy: a claim that runs again
    /// starts from the same one).
    pub fn plan(&self) -> Plan {
        Plan {
            cap: self.cap,
            counts: self.lock().clone(),
        }
    }

    /// An item of `account` starts.
    pub fn start(&self, account: i64) {
        *self.lock().entry(account).or_insert(0) += 1;
        self.running.add(1);
        let mut turns = self.turns.lock().unwrap_or_else(|p| p.into_inner());
        turns.next += 1;
        let now = turns.next;
        turns.last.insert(account, now);
        if turns.last.len() > MAX_TURNS {
            let keep_from = now.saturating_sub((MAX_TURNS / 2) as u64);
            turns.last.retain(|_, at| *at >= keep_from);
        }
    }

    /// An item of `account` ended.
    pub fn done(&self, account: i64) {
        let mut counts = self.lock();
        if let Some(n) = counts.get_mut(&account) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                counts.remove(&account);
            }
        }
        drop(counts);
        self.running.sub(1);
    }

    /// Items in progress now.
    pub fn running(&self) -> usize {
        self.running.running()
    }

    /// Resolves once nothing is in progress (tests and stops).
    pub async fn settled(&self) {
        self.running.settled().await
    }
}

/// A claim's view of the room of each account.
#[derive(Debug, Clone)]
pub struct Plan {
    cap: usize,
    counts: HashMap<i64, usize>,
}

impl Plan {
    /// Whether an item of `account` may start, counting it in if so.
    pub fn take(&mut self, account: i64) -> bool {
        let n = self.counts.entry(account).or_insert(0);
        if *n >= self.cap {
            return false;
        }
        *n += 1;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_account_at_its_cap_is_left_out() {
        let share = Share::new(2);
        let mut plan = share.plan();
        assert!(plan.take(1) && plan.take(1));
        assert!(!plan.take(1), "at its cap");
        assert!(plan.take(2), "another account");
        share.start(1);
        share.start(1);
        assert_eq!(share.full(), [1]);
        share.done(1);
        assert!(share.full().is_empty());
    }

    #[test]
    fn accounts_take_turns() {
        let share = Share::new(1);
        share.start(7);
        share.start(8);
        share.start(7);
        let mut accounts = [7, 8, 9];
        share.in_turn(&mut accounts);
        assert_eq!(accounts, [9, 8, 7], "never served, then the least recent");
    }
}
