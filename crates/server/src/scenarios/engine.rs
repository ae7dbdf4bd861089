//! A small fixed pool of threads for the scenario interpreter: its JavaScript runtime is
//! costly to create, so each thread keeps one, and CPU-bound steps stay off the async
//! workers and off the database threads.
//!
//! Steps are scheduled fairly across accounts: each account has its own queue, accounts
//! take turns, and one account never holds more than all threads but one. A step may run up
//! to its CPU limit (100 ms); an account that queues hundreds of steps which all hit it fills
//! its share of the threads, and another account's step starts on the thread left over at
//! once (the operating system shares the cores between the threads).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Condvar, Mutex};
use std::thread;

type Job = Box<dyn FnOnce() + Send>;

/// The queues of every account and who runs what.
#[derive(Default)]
struct Queues {
    /// Waiting steps, by account.
    waiting: HashMap<i64, VecDeque<Job>>,
    /// Accounts whose next step may start, in turn order.
    turns: VecDeque<i64>,
    /// Steps running now, by account.
    running: HashMap<i64, usize>,
    stopped: bool,
}

impl Queues {
    /// Puts `account` in line if it has a step waiting, is under `cap` and is not in line.
    fn offer(&mut self, account: i64, cap: usize) {
        let has_work = self.waiting.get(&account).is_some_and(|q| !q.is_empty());
        let under = self.running.get(&account).copied().unwrap_or(0) < cap;
        if has_work && under && !self.turns.contains(&account) {
            self.turns.push_back(account);
        }
    }

    /// The next step to run, in turn.
    fn next(&mut self, cap: usize) -> Option<(i64, Job)> {
        let account = self.turns.pop_front()?;
        let queue = self.waiting.get_mut(&account)?;
        let job = queue.pop_front()?;
        if queue.is_empty() {
            self.waiting.remove(&account);
        }
        *self.running.entry(account).or_insert(0) += 1;
        self.offer(account, cap);
        Some((account, job))
    }

    fn done(&mut self, account: i64, cap: usize) {
        if let Some(n) = self.running.get_mut(&account) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                self.running.remove(&account);
            }
        }
        self.offer(account, cap);
    }
}

struct Shared {
    queues: Mutex<Queues>,
    ready: Condvar,
    /// Most steps of one account at once.
    cap: usize,
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, Queues> {
        self.queues.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Runs interpreter steps on dedicated threads, fairly across accounts.
#[derive(Clone)]
pub struct Engine {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine").finish_non_exhaustive()
    }
}

impl Engine {
    /// Starts one interpreter thread per core and one more (at least two), one account
    /// taking at most all of them but one.
    pub fn start(cores: usize) -> std::io::Result<Self> {
        let threads = cores.max(1) + 1;
        let shared = Arc::new(Shared {
            queues: Mutex::default(),
            ready: Condvar::new(),
            cap: threads - 1,
        });
        for i in 0..threads {
            let shared = shared.clone();
            thread::Builder::new()
                .name(format!("actions-{i}"))
                .spawn(move || work(&shared))?;
        }
        Ok(Self { shared })
    }

    /// Runs `f` for `account` on an interpreter thread and waits for its answer.
    pub async fn run<T: Send + 'static>(
        &self,
        account: i64,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> anyhow::Result<T> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        {
            let mut queues = self.shared.lock();
            if queues.stopped {
                anyhow::bail!("the scenario engine stopped");
            }
            queues
                .waiting
                .entry(account)
                .or_default()
                .push_back(Box::new(move || {
                    let _ = tx.send(f());
                }));
            queues.offer(account, self.shared.cap);
        }
        self.shared.ready.notify_one();
        rx.await
            .map_err(|_| anyhow::anyhow!("a scenario step panicked"))
    }
}

fn work(shared: &Shared) {
    loop {
        let (account, job) = {
            let mut queues = shared.lock();
            loop {
                if queues.stopped {
                    return;
                }
                if let Some(next) = queues.next(shared.cap) {
                    break next;
                }
                queues = shared.ready.wait(queues).unwrap_or_else(|p| p.into_inner());
            }
        };
        // A panicking step drops its answer (the caller sees it) and leaves the thread up.
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
        shared.lock().done(account, shared.cap);
        shared.ready.notify_one();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job() -> Job {
        Box::new(|| {})
    }

    #[test]
    fn accounts_take_turns_and_one_never_holds_every_thread() {
        let mut q = Queues::default();
        let cap = 2;
        for _ in 0..5 {
            q.waiting.entry(1).or_default().push_back(job());
        }
        q.offer(1, cap);
        q.waiting.entry(2).or_default().push_back(job());
        q.offer(2, cap);
        let order: Vec<i64> = std::iter::from_fn(|| q.next(cap).map(|(a, _)| a)).collect();
        // Account 1 runs two at most; account 2 gets its turn between them.
        assert_eq!(order, [1, 2, 1]);
        q.done(1, cap);
        assert_eq!(q.next(cap).map(|(a, _)| a), Some(1));
        assert!(q.next(cap).is_none(), "account 1 is at its cap");
    }
}
