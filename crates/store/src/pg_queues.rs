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
//! requests never stops the workers, and the workers never stop requests. Reads and writes
//! are taken in turn.
//!
//! Measured on the SMS benchmark (docs/benchmarks.md, "Requests apart from background
//! work"): with ticks batched with requests, a group of accepted SMS waited for the moves
//! of the tick ahead of it in its transaction.

use std::cell::Cell;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crossbeam_channel::{Receiver, Sender, select};

use crate::pool::{ReadJob, WriteJob, batch};

/// The senders the store holds.
pub(crate) struct Started {
    /// Writes of requests.
    pub(crate) writes: Sender<WriteJob>,
    /// Writes of background work.
    pub(crate) background: Sender<WriteJob>,
    /// Reads.
    pub(crate) reads: Sender<ReadJob>,
}

/// A place among the background batches running, held while one runs: given back when
/// dropped, also when the batch's thread unwinds from a panic, with a ring for a thread
/// that waits without a place.
pub(crate) struct Reservation {
    running: Arc<AtomicUsize>,
    freed: Sender<()>,
}

impl Drop for Reservation {
    fn drop(&mut self) {
        self.running.fetch_sub(1, Ordering::AcqRel);
        // One ring pending is enough: whoever takes it looks again.
        let _ = self.freed.try_send(());
    }
}

/// What a connection thread does next.
pub(crate) enum Next {
    /// A batch of requests' writes, one transaction.
    Requests(Vec<WriteJob>),
    /// A batch of background writes, one transaction, with its place (to drop once run).
    Background(Vec<WriteJob>, Reservation),
    /// A read.
    Read(ReadJob),
    /// The store is gone: the thread ends.
    Closed,
}

/// One connection thread's view of the queues.
pub(crate) struct Queues {
    writes: Receiver<WriteJob>,
    background: Receiver<WriteJob>,
    reads: Receiver<ReadJob>,
    /// This thread looks at the background queue first.
    background_first: bool,
    /// Whether this thread looks at reads before writes next time: in turn, so that neither
    /// a load of writes nor one of reads keeps the other waiting.
    reads_first: Cell<bool>,
    /// Background batches running (or places held by a thread waiting for one), on every
    /// thread.
    running: Arc<AtomicUsize>,
    /// Most background batches running at once: all connections but one (one with one).
    most: usize,
    /// Rung when a place is given back: a thread waiting without one looks again.
    freed: (Sender<()>, Receiver<()>),
}

impl Queues {
    /// The store's senders and the views of `size` threads.
    pub(crate) fn new(size: usize) -> (Started, Vec<Queues>) {
        let (write_tx, write_rx) = crossbeam_channel::unbounded::<WriteJob>();
        let (background_tx, background_rx) = crossbeam_channel::unbounded::<WriteJob>();
        let (read_tx, read_rx) = crossbeam_channel::unbounded::<ReadJob>();
        let running = Arc::new(AtomicUsize::new(0));
        let most = size.saturating_sub(1).max(1);
        let freed = crossbeam_channel::bounded::<()>(1);
        let queues = (0..size.max(1))
            .map(|i| Queues {
                writes: write_rx.clone(),
                background: background_rx.clone(),
                reads: read_rx.clone(),
                background_first: i == 0,
                reads_first: Cell::new(false),
                running: running.clone(),
                most,
                freed: freed.clone(),
            })
            .collect();
        let started = Started {
            writes: write_tx,
            background: background_tx,
            reads: read_tx,
        };
        (started, queues)
    }

    /// Waits for the next job: one already waiting (see [`Queues::ready`]), else whatever
    /// comes first; background work only while this thread holds a place for it, and a
    /// thread without one looks again when a place is given back.
    pub(crate) fn next(&self) -> Next {
        loop {
            if let Some(next) = self.ready() {
                return next;
            }
            let place = self.reserve();
            let never = crossbeam_channel::never::<WriteJob>();
            let (background, freed) = match place {
                Some(_) => (&self.background, crossbeam_channel::never::<()>()),
                None => (&never, self.freed.1.clone()),
            };
            select! {
                recv(self.writes) -> job => return match job {
                    Ok(first) => Next::Requests(batch(&self.writes, first)),
                    Err(_) => Next::Closed,
                },
                recv(background) -> job => return match (job, place) {
                    (Ok(first), Some(place)) => {
                        Next::Background(batch(&self.background, first), place)
                    }
                    _ => Next::Closed,
                },
                recv(self.reads) -> job => return match job {
                    Ok(job) => Next::Read(job),
                    Err(_) => Next::Closed,
                },
                recv(freed) -> _ => {}
            }
        }
    }

    /// A job already waiting, without blocking: a read or a batch of writes, reads and
    /// writes in turn; of writes, requests' first, or background work's on the thread that
    /// takes it first (and only with a place free).
    fn ready(&self) -> Option<Next> {
        let reads_first = self.reads_first.get();
        self.reads_first.set(!reads_first);
        let read = || self.reads.try_recv().ok().map(Next::Read);
        let requests = || {
            self.writes
                .try_recv()
                .ok()
                .map(|first| Next::Requests(batch(&self.writes, first)))
        };
        let background = || {
            let place = self.reserve()?;
            let first = self.background.try_recv().ok()?;
            Some(Next::Background(batch(&self.background, first), place))
        };
        let write = || {
            if self.background_first {
                background().or_else(requests)
            } else {
                requests().or_else(background)
            }
        };
        if reads_first {
            read().or_else(write)
        } else {
            write().or_else(read)
        }
    }

    /// Takes a place among the background batches running, when one is free.
    fn reserve(&self) -> Option<Reservation> {
        self.running
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < self.most).then_some(n + 1)
            })
            .ok()
            .map(|_| Reservation {
                running: self.running.clone(),
                freed: self.freed.0.clone(),
            })
    }
}
