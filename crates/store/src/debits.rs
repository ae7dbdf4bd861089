//! Debits deferred to the end of a batch of writes (PostgreSQL).
//!
//! Every debit of a prepaid balance updates the account's row. In a batch of writes (group
//! commit), the first debit of an account would lock that row until the batch commits, through
//! every later statement of the batch, each a round trip: the batches of the other connections
//! and nodes that debit the same account wait for it, one after the other (the profile in
//! docs/benchmarks.md). So, in a batch of repeatable writes, a debit only checks the credit the
//! batch read (without a lock) less what the batch already took, and is kept here; the batch's
//! last statements before its commit take each account's total in one conditional `UPDATE`
//! and write the ledger lines (`billing::settle_deferred`). The row is locked from that
//! `UPDATE` to the commit only. When another transaction spent the credit in between, the
//! `UPDATE` changes nothing: the batch is rolled back and its writes run again one by one,
//! debiting as before, so the prepaid guarantee and the ledger are exactly those of
//! immediate debits.

use std::collections::HashMap;

use dialtone_domain::{Money, Timestamp};

/// What a batch read of an account at its first debit.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Seen {
    /// The credit then.
    pub credit: Money,
    /// A prepaid account (never below zero).
    pub prepaid: bool,
}

/// A debit kept for the end of the batch.
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    pub account_id: i64,
    pub amount: Money,
    pub kind: String,
    pub cause: String,
    pub now: Timestamp,
}

/// The debits of the batch being written, in the order the writes made them.
#[derive(Debug, Default)]
pub struct Deferred {
    entries: Vec<Entry>,
    seen: HashMap<i64, Seen>,
}

impl Deferred {
    /// Where the debits stand before a write runs.
    pub(crate) fn mark(&self) -> usize {
        self.entries.len()
    }

    /// Forgets the debits made since `mark`: the write that made them was undone.
    pub(crate) fn undo_to(&mut self, mark: usize) {
        self.entries.truncate(mark);
    }

    /// Forgets everything: the batch's transaction was rolled back.
    pub(crate) fn clear(&mut self) {
        self.entries.clear();
        self.seen.clear();
    }

    /// What the batch read of the account, if it debited it before.
    pub(crate) fn seen(&self, account_id: i64) -> Option<Seen> {
        self.seen.get(&account_id).copied()
    }

    /// Keeps what the batch read of the account.
    pub(crate) fn see(&mut self, account_id: i64, seen: Seen) {
        self.seen.insert(account_id, seen);
    }

    /// What the batch's debits of the account add up to (None on overflow).
    pub(crate) fn pending(&self, account_id: i64) -> Option<Money> {
        self.entries
            .iter()
            .filter(|e| e.account_id == account_id)
            .try_fold(Money::ZERO, |sum, e| sum.checked_add(e.amount))
    }

    /// Keeps a debit.
    pub(crate) fn push(&mut self, entry: Entry) {
        self.entries.push(entry);
    }

    /// The debits to settle, leaving none (and forgetting what was read).
    pub(crate) fn take(&mut self) -> Vec<Entry> {
        self.seen.clear();
        std::mem::take(&mut self.entries)
    }
}
