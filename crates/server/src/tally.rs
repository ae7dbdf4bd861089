//! A count of the items of background work in progress on this node, and a way to wait
//! until there are none: how tests (and a stop) know the work a tick started has ended.

use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::sync::Notify;

/// Items in progress, and the waiters for none.
#[derive(Debug, Default)]
pub struct Tally {
    running: AtomicUsize,
    idle: Notify,
}

impl Tally {
    /// `n` items start.
    pub fn add(&self, n: usize) {
        self.running.fetch_add(n, Ordering::AcqRel);
    }

    /// `n` items ended; wakes the waiters when none is left.
    pub fn sub(&self, n: usize) {
        if n > 0 && self.running.fetch_sub(n, Ordering::AcqRel) == n {
            self.idle.notify_waiters();
        }
    }

    /// Items in progress now.
    pub fn running(&self) -> usize {
        self.running.load(Ordering::Acquire)
    }

    /// Resolves once nothing is in progress.
    pub async fn settled(&self) {
        loop {
            let idle = self.idle.notified();
            if self.running() == 0 {
                return;
            }
            idle.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn settles_once_the_last_item_ends() {
        let tally = std::sync::Arc::new(Tally::default());
        tally.settled().await;
        tally.add(2);
        let waiter = tokio::spawn({
            let tally = tally.clone();
            async move { tally.settled().await }
        });
        tally.sub(1);
        tokio::task::yield_now().await;
        assert!(!waiter.is_finished());
        tally.sub(1);
        tokio::time::timeout(std::time::Duration::from_secs(5), waiter)
            .await
            .expect("settled")
            .expect("joined");
        assert_eq!(tally.running(), 0);
    }
}
