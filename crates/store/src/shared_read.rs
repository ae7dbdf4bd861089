//! One read answering every caller that asked for it before it started.
//!
//! On PostgreSQL every request authenticates by reading `auth_version` (see the `key_cache`
//! module), a round trip through the connection pool the writes also use: as many reads as
//! requests (215,640 in one 8-second SMS benchmark). Callers that ask while a read is under
//! way wait for the next read, which starts once that one returns and answers all of them:
//! one read per round trip of the database instead of one per request. A caller is never
//! answered by a read that began before it asked, so it sees every change committed before
//! it asked, as its own read would have.

use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio::sync::oneshot;

use crate::sql::DbError;

type Answer = oneshot::Sender<Result<i64, DbError>>;

/// See the module's documentation.
#[derive(Default)]
pub(crate) struct SharedRead {
    round: Mutex<Round>,
}

#[derive(Default)]
struct Round {
    /// A task is reading (and will read again for the callers that came meanwhile).
    reading: bool,
    /// The callers waiting for the next read.
    waiting: Vec<Answer>,
}

impl SharedRead {
    /// The value as a read begun after this call sees it. `read` is the read; the first
    /// caller to find no read under way starts a task that runs it, round after round, until
    /// no caller is waiting.
    pub(crate) async fn get<R, F>(self: &Arc<Self>, read: R) -> Result<i64, DbError>
    where
        R: Fn() -> F + Send + 'static,
        F: Future<Output = Result<i64, DbError>> + Send,
    {
        let (tx, rx) = oneshot::channel();
        let start = {
            let mut round = self.lock();
            round.waiting.push(tx);
            !std::mem::replace(&mut round.reading, true)
        };
        if start {
            let shared = self.clone();
            tokio::spawn(async move { shared.serve(read).await });
        }
        rx.await.map_err(|_| DbError::Closed)?
    }

    /// Reads for the callers waiting, round after round, until none is.
    async fn serve<R, F>(&self, read: R)
    where
        R: Fn() -> F,
        F: Future<Output = Result<i64, DbError>>,
    {
        // Should this task end early (a panic, the runtime shutting down), the next caller
        // starts a read again, and those waiting get `DbError::Closed` instead of waiting
        // for ever.
        let mut ended = Ended {
            shared: self,
            early: true,
        };
        loop {
            let callers = {
                let mut round = self.lock();
                if round.waiting.is_empty() {
                    round.reading = false;
                    // A caller may start the next task as soon as the lock is released.
                    ended.early = false;
                    return;
                }
                std::mem::take(&mut round.waiting)
            };
            let value = read().await;
            for caller in callers {
                let _ = caller.send(value.clone());
            }
        }
    }

    fn lock(&self) -> MutexGuard<'_, Round> {
        // A panic while holding the lock leaves a consistent round (a push or a take).
        self.round.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Marks the reading task ended when it is dropped before it ended by itself.
struct Ended<'a> {
    shared: &'a SharedRead,
    /// The task has not ended by itself (it panicked or was dropped).
    early: bool,
}

impl Drop for Ended<'_> {
    fn drop(&mut self) {
        if !self.early {
            return;
        }
        let mut round = self.shared.lock();
        round.reading = false;
        // Dropping their senders answers them with `DbError::Closed`.
        round.waiting.clear();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicI64, Ordering};

    use super::*;

    /// Callers who ask while a read is under way get the next read, never the one under
    /// way; those who ask together share one.
    #[tokio::test]
    async fn a_caller_gets_a_read_begun_after_it_asked() {
        let shared = Arc::new(SharedRead::default());
        let reads = Arc::new(AtomicI64::new(0));
        let (release, gate) = tokio::sync::watch::channel(0_i64);
        let read = {
            let reads = reads.clone();
            move || {
                let (reads, mut gate) = (reads.clone(), gate.clone());
                async move {
                    // Read number n waits until the test lets n reads through.
                    let n = reads.fetch_add(1, Ordering::SeqCst) + 1;
                    gate.wait_for(|&open| open >= n)
                        .await
                        .map_err(|e| DbError::Other(e.to_string()))?;
                    Ok(n)
                }
            }
        };
        let first = tokio::spawn({
            let (shared, read) = (shared.clone(), read.clone());
            async move { shared.get(read).await }
        });
        while reads.load(Ordering::SeqCst) < 1 {
            tokio::task::yield_now().await;
        }
        // The first read is under way: these three wait for the second.
        let later: Vec<_> = (0..3)
            .map(|_| {
                let (shared, read) = (shared.clone(), read.clone());
                tokio::spawn(async move { shared.get(read).await })
            })
            .collect();
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
        release.send(2).unwrap();
        assert_eq!(first.await.unwrap().unwrap(), 1);
        for caller in later {
            assert_eq!(
                caller.await.unwrap().unwrap(),
                2,
                "the read begun after it asked"
            );
        }
        assert_eq!(reads.load(Ordering::SeqCst), 2, "one read for the three");
        // Nothing under way now: the next caller starts a read of its own.
        release.send(3).unwrap();
        assert_eq!(shared.get(read).await.unwrap(), 3);
    }

    /// A read that panics fails its callers and leaves the way free for the next read.
    #[tokio::test]
    async fn a_read_that_panics_does_not_block_the_next() {
        let shared = Arc::new(SharedRead::default());
        let failed = shared
            .get(|| async { panic!("the read failed") as Result<i64, DbError> })
            .await;
        assert!(matches!(failed, Err(DbError::Closed)), "{failed:?}");
        let next = tokio::time::timeout(
            std::time::Duration::from_secs(10),
            shared.get(|| async { Ok(7) }),
        )
        .await
        .expect("the next read starts");
        assert_eq!(next.unwrap(), 7);
    }
}
