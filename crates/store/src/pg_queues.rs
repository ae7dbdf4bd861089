//! Which job each PostgreSQL connection thread takes next: requests' writes, background
//! work's writes (the workers' ticks, [`Store::background`](crate::Store::background)) and
//! reads.
//!
//! Writes are taken in batches, one transaction each (group commit), but requests' writes
//! and background writes never share one: a request's answer waits for the statements of
//! its own batch only, not for a worker's tick of a hundred SMS moves. And background work
//! never holds every connection: at most all connections but one run it at a time, so a
//! request always finds a connection that is not busy with a tick. The first thread looks
//! at the background queue before the requests' one, the others after it: a load of
//! requests never stops the workers, and the workers never stop requests.
//!
//! Measured on the SMS benchmark (docs/benchmarks.md, "Requests apart from background
//! work"): with ticks batched with requests, a group of accepted SMS waited for the moves
//! of the tick ahead of it in its transaction.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crossbeam_channel::{Receiver, Sender, select};

use crate::pool::{MAX_BATCH, ReadJob, WriteJob};

/// The senders the store holds.
pub(crate) struct Started {
    /// Writes of requests.
    pub(crate) writes: Sender<WriteJob>,
    /// Writes of background work.
    pub(crate) background: Sender<WriteJob>,
    /// Reads.
    pub(crate) reads: Sender<ReadJob>,
}

/// Whose writes a batch holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Requests'.
    Requests,
    /// Background work's.
    Background,
}

/// What a connection thread does next.
pub(crate) enum Next {
    /// A batch of writes, one transaction.
    Write(Vec<WriteJob>, Kind),
    /// A read.
    Read(ReadJob),
    /// The store is gone: the thread ends.
    Closed,
}

/// One connection thread's view of the queues.
pub(crate) struct Queues {
    writes: Receiver<WriteJob>,
    background: Receiver<WriteJob>,
    /// To put back a background job taken when its share of the connections was full.
    requeue: Sender<WriteJob>,
    reads: Receiver<ReadJob>,
    /// This thread looks at the background queue first.
    background_first: bool,
    /// Background batches running, on every thread.
    running: Arc<AtomicUsize>,
    /// Most background batches running at once: all connections but one (one with one).
    most: usize,
}

impl Queues {
    /// The store's senders and the views of `size` threads.
    pub(crate) fn new(size: usize) -> (Started, Vec<Queues>) {
        let (write_tx, write_rx) = crossbeam_channel::unbounded::<WriteJob>();
        let (background_tx, background_rx) = crossbeam_channel::unbounded::<WriteJob>();
        let (read_tx, read_rx) = crossbeam_channel::unbounded::<ReadJob>();
        let running = Arc::new(AtomicUsize::new(0));
        let most = size.saturating_sub(1).max(1);
        let queues = (0..size.max(1))
            .map(|i| Queues {
                writes: write_rx.clone(),
                background: background_rx.clone(),
                requeue: background_tx.clone(),
                reads: read_rx.clone(),
                background_first: i == 0,
                running: running.clone(),
                most,
            })
            .collect();
        let started = Started {
            writes: write_tx,
            background: background_tx,
            reads: read_tx,
        };
        (started, queues)
    }

    /// Waits for the next job: a batch waiting in one of the write queues (see the module's
    /// documentation for which first), else whatever comes first.
    pub(crate) fn next(&self) -> Next {
        loop {
            if let Some(next) = self.ready() {
                return next;
            }
            let never = crossbeam_channel::never::<WriteJob>();
            let background = if self.has_room() {
                &self.background
            } else {
                &never
            };
            select! {
                recv(self.writes) -> job => {
                    let Ok(first) = job else { return Next::Closed };
                    return Next::Write(batch(&self.writes, first), Kind::Requests);
                }
                recv(background) -> job => {
                    let Ok(first) = job else { return Next::Closed };
                    if self.reserve() {
                        return Next::Write(batch(&self.background, first), Kind::Background);
                    }
                    // Another thread took the last place meanwhile: the job waits its turn.
                    if self.requeue.send(first).is_err() {
                        return Next::Closed;
                    }
                }
                recv(self.reads) -> job => {
                    let Ok(job) = job else { return Next::Closed };
                    return Next::Read(job);
                }
            }
        }
    }

    /// Runs `batch` (a closure running it), counted among the background batches running
    /// when it is one (its place was reserved when it was taken).
    pub(crate) fn run(&self, kind: Kind, batch: impl FnOnce()) {
        batch();
        match kind {
            Kind::Background => {
                self.running.fetch_sub(1, Ordering::AcqRel);
            }
            Kind::Requests => {}
        }
    }

    /// A batch already waiting, without blocking.
    fn ready(&self) -> Option<Next> {
        let requests = || {
            self.writes
                .try_recv()
                .ok()
                .map(|first| Next::Write(batch(&self.writes, first), Kind::Requests))
        };
        let background = || {
            if !self.reserve() {
                return None;
            }
            match self.background.try_recv() {
                Ok(first) => Some(Next::Write(
                    batch(&self.background, first),
                    Kind::Background,
                )),
                Err(_) => {
                    self.running.fetch_sub(1, Ordering::AcqRel);
                    None
                }
            }
        };
        if self.background_first {
            background().or_else(requests)
        } else {
            requests().or_else(background)
        }
    }

    /// Whether a background batch could start now.
    fn has_room(&self) -> bool {
        self.running.load(Ordering::Acquire) < self.most
    }

    /// Takes a place among the background batches running, when one is free.
    fn reserve(&self) -> bool {
        self.running
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < self.most).then_some(n + 1)
            })
            .is_ok()
    }
}

/// `first` and every job waiting behind it in `rx`, up to [`MAX_BATCH`].
fn batch(rx: &Receiver<WriteJob>, first: WriteJob) -> Vec<WriteJob> {
    let mut batch = vec![first];
    while batch.len() < MAX_BATCH {
        match rx.try_recv() {
            Ok(job) => batch.push(job),
            Err(_) => break,
        }
    }
    batch
}
