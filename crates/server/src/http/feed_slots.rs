//! The console's live feeds open per account on this node, under a cap: a client opening
//! streams in a loop holds at most [`PER_ACCOUNT`] of them (each polls the database).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Live feeds one account may hold open on a node.
pub(crate) const PER_ACCOUNT: usize = 8;

/// Open feeds per account.
#[derive(Debug, Default, Clone)]
pub(crate) struct FeedSlots(Arc<Mutex<HashMap<i64, usize>>>);

/// A feed's place; given back when dropped.
#[derive(Debug)]
pub(crate) struct FeedSlot {
    slots: FeedSlots,
    account: i64,
}

impl FeedSlots {
    /// A place for a feed of `account`, or None at its cap.
    pub(crate) fn take(&self, account: i64) -> Option<FeedSlot> {
        let mut open = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let n = open.entry(account).or_default();
        if *n >= PER_ACCOUNT {
            return None;
        }
        *n += 1;
        Some(FeedSlot {
            slots: self.clone(),
            account,
        })
    }
}

impl Drop for FeedSlot {
    fn drop(&mut self) {
        let mut open = self
            .slots
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(n) = open.get_mut(&self.account) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                open.remove(&self.account);
            }
        }
    }
}
