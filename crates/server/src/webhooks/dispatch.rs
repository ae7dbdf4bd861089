//! Who may be tried now: the deliveries in flight on this node by account and by endpoint,
//! and the endpoints backed off after failing, so that one account or one dead endpoint
//! never holds up the others.
//!
//! - An account has at most [`PER_ACCOUNT`] tries in flight, an endpoint [`PER_ENDPOINT`],
//!   the node [`IN_FLIGHT`]; a claim leaves out the accounts and endpoints at their cap (they
//!   stay due), so the next claim reaches the others' deliveries.
//! - An endpoint that failed [`BACKOFF_AFTER`] tries in a row is backed off: one try at a time
//!   goes to it (a probe) until one succeeds, so a dead endpoint with thousands of due
//!   deliveries costs one connection, never the others' turn. Its tries are never sent before
//!   their time (try n waits n x 10 s after try n-1), only later when its line is long.
//! - A claim visits the accounts with due deliveries in turn, from the one after where the
//!   last claim stopped, and reads a bounded number of each one's: one account's backlog
//!   never costs a claim more than that, nor hides another account's deliveries.
//! - Tries are recorded as they end (a few at a time, by one task), not when the slowest of
//!   a batch ends; a try frees its account's and endpoint's place as soon as it ends.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicI64, Ordering};

use dialtone_store::deliveries::{Candidate, Due, Exclusions};

use crate::tally::Tally;

/// Tries in flight on a node.
pub(crate) const IN_FLIGHT: usize = 256;
/// Tries in flight for one account.
pub(crate) const PER_ACCOUNT: usize = 128;
/// Tries in flight to one endpoint.
pub(crate) const PER_ENDPOINT: usize = 64;
/// Failed tries in a row after which an endpoint is backed off (one try at a time).
pub(crate) const BACKOFF_AFTER: u32 = 5;
/// Most accounts or endpoints a claim leaves out by name (the busiest first).
const MAX_EXCLUDED: usize = 64;

#[derive(Debug, Default)]
struct Health {
    failures: u32,
}

impl Health {
    /// Tries at once this endpoint may take.
    fn cap(&self) -> usize {
        if self.failures >= BACKOFF_AFTER {
            1
        } else {
            PER_ENDPOINT
        }
    }
}

#[derive(Debug, Default)]
struct Counts {
    by_account: HashMap<i64, usize>,
    by_endpoint: HashMap<String, usize>,
    health: HashMap<String, Health>,
}

/// A claim's view of what is in flight.
#[derive(Debug, Clone)]
pub struct Planner {
    by_account: HashMap<i64, usize>,
    by_endpoint: HashMap<String, usize>,
    /// Endpoints that take one try at a time.
    backed_off: Vec<String>,
}

impl Planner {
    /// Whether `d` may be tried now, counting it in if so.
    pub fn take(&mut self, d: &Candidate) -> bool {
        let account = self.by_account.entry(d.account_id).or_insert(0);
        if *account >= PER_ACCOUNT {
            return false;
        }
        let cap = if self.backed_off.contains(&d.endpoint) {
            1
        } else {
            PER_ENDPOINT
        };
        let endpoint = self.by_endpoint.entry(d.endpoint.clone()).or_insert(0);
        if *endpoint >= cap {
            return false;
        }
        *endpoint += 1;
        if let Some(a) = self.by_account.get_mut(&d.account_id) {
            *a += 1;
        }
        true
    }
}

/// The deliveries of this node.
#[derive(Debug)]
pub struct Dispatch {
    counts: Mutex<Counts>,
    in_flight: Tally,
    /// The last account the last claim visited: the next one starts after it, so every
    /// account with due deliveries gets its turn whatever the others' backlogs.
    walk_after: AtomicI64,
}

impl Default for Dispatch {
    /// A node's first walk starts before every account (account ids are positive; the walk
    /// goes round only once it has passed the last).
    fn default() -> Self {
        Self {
            counts: Mutex::default(),
            in_flight: Tally::default(),
            walk_after: AtomicI64::new(i64::MIN),
        }
    }
}

impl Dispatch {
    fn lock(&self) -> std::sync::MutexGuard<'_, Counts> {
        self.counts.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Where the next claim's walk of the accounts starts (see `deliveries::claim`).
    pub fn walk_after(&self) -> i64 {
        self.walk_after.load(Ordering::Relaxed)
    }

    /// A committed claim's walk ended at this account.
    pub fn walk_ended(&self, account: i64) {
        self.walk_after.store(account, Ordering::Relaxed);
    }

    /// Tries this node may start now.
    pub fn room(&self) -> usize {
        IN_FLIGHT.saturating_sub(self.in_flight.running())
    }

    /// What a claim leaves out.
    pub fn exclusions(&self) -> Exclusions {
        let counts = self.lock();
        let mut accounts: Vec<(i64, usize)> = counts
            .by_account
            .iter()
            .filter(|(_, n)| **n >= PER_ACCOUNT)
            .map(|(a, n)| (*a, *n))
            .collect();
        accounts.sort_by_key(|(_, n)| std::cmp::Reverse(*n));
        let mut endpoints: Vec<String> = counts
            .by_endpoint
            .iter()
            .filter(|(e, n)| **n >= counts.health.get(*e).map_or(PER_ENDPOINT, Health::cap))
            .map(|(e, _)| e.clone())
            .collect();
        endpoints.sort();
        Exclusions {
            accounts: accounts
                .into_iter()
                .take(MAX_EXCLUDED)
                .map(|(a, _)| a)
                .collect(),
            endpoints: endpoints.into_iter().take(MAX_EXCLUDED).collect(),
        }
    }

    /// What a claim may take now: a copy of the counts, the claim's `pick` (a claim that
    /// runs again after a rollback starts from the same copy).
    pub fn planner(&self) -> Planner {
        let counts = self.lock();
        Planner {
            by_account: counts.by_account.clone(),
            by_endpoint: counts.by_endpoint.clone(),
            backed_off: counts
                .health
                .iter()
                .filter(|(_, h)| h.failures >= BACKOFF_AFTER)
                .map(|(e, _)| e.clone())
                .collect(),
        }
    }

    /// Puts committed claims in flight.
    pub fn start(&self, claimed: &[Due]) {
        let mut counts = self.lock();
        for d in claimed {
            *counts.by_account.entry(d.account_id).or_insert(0) += 1;
            *counts.by_endpoint.entry(d.endpoint.clone()).or_insert(0) += 1;
        }
        self.in_flight.add(claimed.len());
    }

    /// A try ended: frees its account's and endpoint's place and updates the endpoint's
    /// health (the try still counts in flight until [`Dispatch::recorded`]).
    pub fn done(&self, account: i64, endpoint: &str, ok: Option<bool>) {
        let mut counts = self.lock();
        if let Some(n) = counts.by_account.get_mut(&account) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                counts.by_account.remove(&account);
            }
        }
        if let Some(n) = counts.by_endpoint.get_mut(endpoint) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                counts.by_endpoint.remove(endpoint);
            }
        }
        match ok {
            Some(true) => {
                counts.health.remove(endpoint);
            }
            Some(false) => {
                let health = counts.health.entry(endpoint.to_owned()).or_default();
                health.failures = health.failures.saturating_add(1);
            }
            None => {}
        }
        // Forget the healthy.
        counts.health.retain(|_, h| h.failures > 0);
    }

    /// `n` ended tries were recorded (or given up to their leases).
    pub fn recorded(&self, n: usize) {
        self.in_flight.sub(n);
    }

    /// Resolves once no try runs on this node (tests and stops).
    pub async fn settled(&self) {
        self.in_flight.settled().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dialtone_domain::Timestamp;

    fn due(account: i64, endpoint: &str) -> Due {
        Due {
            id: 1,
            endpoint: endpoint.into(),
            try_number: 0,
            hook_sid: None,
            hook_status: None,
            secret: None,
            algo: "SHA256".into(),
            event_id: "e".into(),
            event_type: "billing.credit".into(),
            data: "{}".into(),
            event_at: Timestamp::from_millis(0),
            account_id: account,
        }
    }

    /// Plans and starts what a claim would take.
    fn claim(d: &Dispatch, candidates: &[Due]) -> usize {
        let mut plan = d.planner();
        let taken: Vec<Due> = candidates
            .iter()
            .filter(|c| {
                plan.take(&Candidate {
                    id: c.id,
                    account_id: c.account_id,
                    endpoint: c.endpoint.clone(),
                })
            })
            .cloned()
            .collect();
        d.start(&taken);
        taken.len()
    }

    #[test]
    fn caps_per_endpoint_and_backoff() {
        let d = Dispatch::default();
        let dead: Vec<Due> = (0..100).map(|_| due(1, "http://dead/")).collect();
        assert_eq!(claim(&d, &dead), PER_ENDPOINT, "the endpoint's cap");
        assert_eq!(claim(&d, &[due(2, "http://fine/")]), 1, "others go on");
        assert_eq!(d.exclusions().endpoints, ["http://dead/"]);
        for _ in 0..PER_ENDPOINT {
            d.done(1, "http://dead/", Some(false));
        }
        d.recorded(PER_ENDPOINT);
        // Failed enough: one try at a time.
        assert_eq!(claim(&d, &dead), 1);
        assert_eq!(d.exclusions().endpoints, ["http://dead/"]);
        d.done(1, "http://dead/", Some(true));
        d.recorded(1);
        assert_eq!(claim(&d, &dead), PER_ENDPOINT, "a success ends the backoff");
        for _ in 0..PER_ENDPOINT {
            d.done(1, "http://dead/", Some(true));
        }
        d.done(2, "http://fine/", Some(true));
        d.recorded(PER_ENDPOINT + 1);
        assert_eq!(d.room(), IN_FLIGHT);
    }

    #[test]
    fn an_account_has_its_cap() {
        let d = Dispatch::default();
        let many: Vec<Due> = (0..200).map(|i| due(7, &format!("http://h{i}/"))).collect();
        assert_eq!(claim(&d, &many), PER_ACCOUNT);
        assert_eq!(d.exclusions().accounts, [7]);
    }
}
