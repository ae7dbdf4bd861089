//! Synthesized audio kept by voice and text, within a byte budget: the oldest entries go
//! first when it is full.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use dialtone_sip::media::Pcm;

/// A voice and a text.
pub(super) type Key = (String, String);

struct Kept {
    map: HashMap<Key, Pcm>,
    order: VecDeque<Key>,
    bytes: usize,
}

/// The cache.
pub(super) struct Cache {
    budget: usize,
    kept: Mutex<Kept>,
    hits: AtomicU64,
}

impl Cache {
    /// A cache of at most `budget` bytes of audio.
    pub(super) fn new(budget: usize) -> Self {
        Self {
            budget,
            kept: Mutex::new(Kept {
                map: HashMap::new(),
                order: VecDeque::new(),
                bytes: 0,
            }),
            hits: AtomicU64::new(0),
        }
    }

    /// The audio of `key`, if kept.
    pub(super) fn get(&self, key: &Key) -> Option<Pcm> {
        let kept = self.kept.lock().unwrap_or_else(|p| p.into_inner());
        let found = kept.map.get(key).cloned();
        if found.is_some() {
            self.hits.fetch_add(1, Ordering::Relaxed);
        }
        found
    }

    /// Keeps `pcm` under `key`, dropping the oldest entries beyond the budget.
    pub(super) fn put(&self, key: Key, pcm: Pcm) {
        let size = pcm.len() * 2 + key.0.len() + key.1.len();
        if size > self.budget {
            return;
        }
        let mut kept = self.kept.lock().unwrap_or_else(|p| p.into_inner());
        if kept.map.contains_key(&key) {
            return;
        }
        while kept.bytes + size > self.budget {
            let Some(old) = kept.order.pop_front() else {
                break;
            };
            if let Some(pcm) = kept.map.remove(&old) {
                kept.bytes -= pcm.len() * 2 + old.0.len() + old.1.len();
            }
        }
        kept.bytes += size;
        kept.order.push_back(key.clone());
        kept.map.insert(key, pcm);
    }

    /// Entries served so far.
    pub(super) fn hits(&self) -> u64 {
        self.hits.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_oldest_go_first_within_the_budget() {
        let cache = Cache::new(100);
        let key = |t: &str| ("v".to_owned(), t.to_owned());
        cache.put(key("a"), vec![0i16; 20].into());
        cache.put(key("b"), vec![0i16; 20].into());
        assert!(cache.get(&key("a")).is_some());
        cache.put(key("c"), vec![0i16; 20].into());
        assert!(cache.get(&key("a")).is_none(), "a went first");
        assert!(cache.get(&key("b")).is_some());
        assert!(cache.get(&key("c")).is_some());
        cache.put(key("huge"), vec![0i16; 1000].into());
        assert!(
            cache.get(&key("huge")).is_none(),
            "over the budget: not kept"
        );
        assert_eq!(cache.hits(), 3);
    }
}
