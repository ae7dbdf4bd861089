//! Scenarios this node read lately, by account and sid, so that starting a run through the
//! API does not read its scenario again: the group that stores the run checks, in its own
//! transaction, that the scenario is still stored as it was kept (`runs::ApiStart`), and
//! the request reads it again when it is not. A scenario changed or deleted on any node is
//! therefore never run from here; this cache only saves the read.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use dialtone_store::scenarios::Scenario;

/// Most bytes of names and scripts kept (the cache is emptied when a scenario would take
/// it past this: a bound on memory, whatever the accounts store).
const MAX_BYTES: usize = 8 * 1024 * 1024;

/// Scenarios by (account, sid), as last read by this node.
#[derive(Default)]
pub(crate) struct KnownScenarios {
    kept: Mutex<Kept>,
}

#[derive(Default)]
struct Kept {
    by_sid: HashMap<(i64, String), Scenario>,
    bytes: usize,
}

impl std::fmt::Debug for KnownScenarios {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KnownScenarios").finish_non_exhaustive()
    }
}

fn size(s: &Scenario) -> usize {
    s.name.len() + s.script.len() + s.sid.as_str().len()
}

impl KnownScenarios {
    fn kept(&self) -> std::sync::MutexGuard<'_, Kept> {
        // Every change to the map is an insert, a remove or a clear: it stays consistent.
        self.kept.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The account's scenario as this node last read it, if kept.
    pub(crate) fn get(&self, account_id: i64, sid: &str) -> Option<Scenario> {
        self.kept()
            .by_sid
            .get(&(account_id, sid.to_owned()))
            .cloned()
    }

    /// Keeps a scenario just read from the database.
    pub(crate) fn keep(&self, s: &Scenario) {
        let add = size(s);
        if add > MAX_BYTES {
            return;
        }
        let mut kept = self.kept();
        if kept.bytes + add > MAX_BYTES {
            kept.by_sid.clear();
            kept.bytes = 0;
        }
        if let Some(old) = kept
            .by_sid
            .insert((s.account_id, s.sid.as_str().to_owned()), s.clone())
        {
            kept.bytes -= size(&old);
        }
        kept.bytes += add;
    }

    /// Forgets a scenario changed, deleted or found stale.
    pub(crate) fn forget(&self, account_id: i64, sid: &str) {
        let mut kept = self.kept();
        if let Some(old) = kept.by_sid.remove(&(account_id, sid.to_owned())) {
            kept.bytes -= size(&old);
        }
    }
}

#[cfg(test)]
mod tests {
    use dialtone_domain::{Sid, Timestamp};

    use super::*;

    fn scenario(account_id: i64, sid: &str, script: &str) -> Scenario {
        Scenario {
            id: 1,
            sid: Sid::parse(sid).unwrap_or_else(|| panic!("bad test sid {sid}")),
            account_id,
            name: "n".into(),
            script: script.into(),
            created: Timestamp::from_millis(0),
            updated: Timestamp::from_millis(0),
        }
    }

    #[test]
    fn keeps_by_account_and_forgets() {
        let known = KnownScenarios::default();
        let s = scenario(1, "abcd1234", "x");
        known.keep(&s);
        assert_eq!(known.get(1, s.sid.as_str()), Some(s.clone()));
        assert_eq!(known.get(2, s.sid.as_str()), None);
        known.forget(1, s.sid.as_str());
        assert_eq!(known.get(1, s.sid.as_str()), None);
        assert_eq!(known.kept().bytes, 0);
    }

    #[test]
    fn bounded_by_bytes() {
        let known = KnownScenarios::default();
        let big = "y".repeat(MAX_BYTES / 3);
        for n in 0..10 {
            known.keep(&scenario(n, "abcd1234", &big));
            assert!(known.kept().bytes <= MAX_BYTES);
        }
        assert!(known.kept().by_sid.len() < 4);
        known.keep(&scenario(99, "abcd1234", &"z".repeat(MAX_BYTES + 1)));
        assert_eq!(known.get(99, "abcd1234"), None);
    }
}
