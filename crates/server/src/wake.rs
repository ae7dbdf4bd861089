//! Waking the background loops when new work is committed. Every loop of a kind watches the
//! same signal, so one commit wakes each loop that may have work (a `Notify` would wake only
//! one of them, and lose the wake-up of a loop that was busy at the time).

use tokio::sync::watch;

/// A signal every background loop watches.
#[derive(Debug)]
pub struct Wake(watch::Sender<u64>);

impl Default for Wake {
    fn default() -> Self {
        Self(watch::channel(0).0)
    }
}

impl Wake {
    /// Wakes every loop watching (now, or at its next wait if it is busy).
    pub fn notify_one(&self) {
        self.0.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// A watcher for one loop.
    pub fn watch(&self) -> Watcher {
        let mut rx = self.0.subscribe();
        rx.mark_unchanged();
        Watcher(rx)
    }
}

/// One loop's view of a [`Wake`].
#[derive(Debug)]
pub struct Watcher(watch::Receiver<u64>);

impl Watcher {
    /// Resolves at the next wake-up (at once if one came since the last call).
    pub async fn woken(&mut self) {
        if self.0.changed().await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}
