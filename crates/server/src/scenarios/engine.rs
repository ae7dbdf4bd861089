//! A small fixed pool of threads for the scenario interpreter: its JavaScript runtime is
//! costly to create, so each thread keeps one, and CPU-bound steps stay off the async
//! workers and off the database threads.

use std::sync::Arc;
use std::thread;

use crossbeam_channel::Sender;

type Job = Box<dyn FnOnce() + Send>;

/// Runs interpreter steps on dedicated threads.
#[derive(Clone)]
pub struct Engine {
    jobs: Arc<Sender<Job>>,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine").finish_non_exhaustive()
    }
}

impl Engine {
    /// Starts `threads` interpreter threads (at least one).
    pub fn start(threads: usize) -> std::io::Result<Self> {
        let (tx, rx) = crossbeam_channel::unbounded::<Job>();
        for i in 0..threads.max(1) {
            let rx = rx.clone();
            thread::Builder::new()
                .name(format!("actions-{i}"))
                .spawn(move || {
                    while let Ok(job) = rx.recv() {
                        job();
                    }
                })?;
        }
        Ok(Self { jobs: Arc::new(tx) })
    }

    /// Runs `f` on an interpreter thread and waits for its answer.
    pub async fn run<T: Send + 'static>(
        &self,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> anyhow::Result<T> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.jobs
            .send(Box::new(move || {
                let _ = tx.send(f());
            }))
            .map_err(|_| anyhow::anyhow!("the scenario engine stopped"))?;
        rx.await
            .map_err(|_| anyhow::anyhow!("a scenario step panicked"))
    }
}
