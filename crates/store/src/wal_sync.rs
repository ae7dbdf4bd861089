//! When a SQLite commit is on disk: the WAL is synced by a thread of its own, beside the
//! writer, and nothing is answered before the sync that covers it returned.
//!
//! With `synchronous = FULL`, SQLite fsyncs the WAL inside every `COMMIT`, on the one writer
//! thread, and every request waits for the writer: while it waits for the disk, the next
//! batch cannot start. Here the writer commits with `synchronous = NORMAL` (the WAL frames
//! are written, not synced) and hands the batch's writes to this module's thread, which
//! fsyncs the WAL file and then answers them; meanwhile the writer runs the next batch (see
//! the `open_batch` module). Durability is unchanged: a write's caller is answered only
//! after an fsync of the WAL that began after its `COMMIT` returned, which is what `FULL`
//! gives, and one fsync answers every commit made before it.
//!
//! Why this is safe: a commit is durable once its WAL frames and the WAL header of their
//! generation are on disk, and an fsync of the WAL file after the commit writes both.
//! Checkpoints sync the WAL themselves before copying frames into the database (SQLite does
//! that in `NORMAL` mode too), so no unsynced frame reaches the database file. A crash
//! before the sync loses only commits nobody was told about.
//!
//! Reads see a commit as soon as it is made, before its sync. A read that leaves the store
//! (its result shown to a client or acted on) waits for the sync of every commit begun
//! before it ended ([`WalSync::horizon`]), so nothing is shown that a power cut could take
//! back; only a read that decides a write that follows may skip the wait (the write's own
//! sync covers what it read).
//!
//! A failed fsync fails the store: the page cache may since have dropped the data that
//! failed to reach the disk, so no later sync could be trusted (PostgreSQL stops for the
//! same reason). Every caller waiting then, and every one after, gets an error at once: the
//! writer commits nothing more (each later batch is rolled back), so no write is left
//! waiting for a sync that will never be trusted. The operator restarts the server, and
//! SQLite's recovery keeps what reached the disk.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread;

use crossbeam_channel::{Receiver, Sender};
use tokio::sync::watch;

use crate::pool::WriteJob;
use crate::sql::DbError;

/// Where the syncs stand, as the waiting readers see it.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Synced {
    /// Every commit up to this sequence number is on disk.
    Upto(u64),
    /// The store can no longer promise durability; every wait fails with this reason.
    Failed(String),
}

/// Makes the WAL durable: the file's contents up to now reach the disk.
pub(crate) type SyncFn = Box<dyn FnMut() -> std::io::Result<()> + Send>;

/// A batch the writer committed, waiting for its sync to be answered.
struct Committed {
    seq: u64,
    jobs: Vec<WriteJob>,
    outcome: Result<(), DbError>,
}

/// The commits made and synced, shared with the syncer thread.
struct Progress {
    /// Commits begun by the writer (the last sequence number handed out).
    issued: AtomicU64,
    /// The last commit known on disk.
    synced: AtomicU64,
    state: watch::Sender<Synced>,
}

/// Held by the writer (which numbers its commits) and the store (whose reads wait for what
/// they saw to be durable). Dropping the last one lets the syncer answer what it was sent
/// and stop.
pub(crate) struct WalSync {
    progress: Arc<Progress>,
    /// Committed batches, to the syncer.
    to_sync: Sender<Committed>,
    /// Rung by the syncer after each sync, for the writer waiting to commit.
    done: Receiver<()>,
}

impl WalSync {
    /// Starts the syncer thread over `sync`.
    pub(crate) fn start(sync: SyncFn) -> Result<Arc<Self>, DbError> {
        let (to_sync, committed) = crossbeam_channel::unbounded();
        let (ring, done) = crossbeam_channel::bounded(1);
        let (state, _) = watch::channel(Synced::Upto(0));
        let progress = Arc::new(Progress {
            issued: AtomicU64::new(0),
            synced: AtomicU64::new(0),
            state,
        });
        let syncer = progress.clone();
        thread::Builder::new()
            .name("sqlite-wal-sync".into())
            .spawn(move || sync_loop(&syncer, &committed, &ring, sync))
            .map_err(|e| DbError::Other(e.to_string()))?;
        Ok(Arc::new(Self {
            progress,
            to_sync,
            done,
        }))
    }

    /// The fsync of a SQLite database's WAL file (`<path>-wal`), opened at the first sync
    /// (a commit was made, so the file exists). SQLite keeps that file, the same inode, for
    /// as long as one of its connections is open, and the store's connections stay open as
    /// long as the writer runs. `fdatasync` writes the data and whatever metadata reading it
    /// back needs (a grown size), which is what SQLite's own sync of the WAL does.
    pub(crate) fn wal_file(db: &Path) -> SyncFn {
        let mut wal = db.as_os_str().to_owned();
        wal.push("-wal");
        let wal = PathBuf::from(wal);
        let mut file: Option<File> = None;
        Box::new(move || {
            let open = match file.take() {
                Some(open) => open,
                None => File::open(&wal).map_err(|e| {
                    std::io::Error::new(e.kind(), format!("{}: {e}", wal.display()))
                })?,
            };
            let synced = open.sync_data();
            file = Some(open);
            synced
        })
    }

    /// Called by the writer just before `COMMIT`: the commit's sequence number.
    pub(crate) fn begin_commit(&self) -> u64 {
        self.progress.issued.fetch_add(1, Ordering::SeqCst) + 1
    }

    /// Called by the writer once `COMMIT` returned (kept or not): the syncer answers the
    /// batch's writes after the sync that covers it.
    pub(crate) fn end_commit(&self, seq: u64, jobs: Vec<WriteJob>, outcome: Result<(), DbError>) {
        let committed = Committed { seq, jobs, outcome };
        if let Err(lost) = self.to_sync.send(committed) {
            // The syncer is gone (it never stops while the store is open): the callers
            // cannot be told their write is durable.
            for job in lost.0.jobs {
                job.finish(Err(DbError::Closed));
            }
        }
    }

    /// True when every commit is on disk, or when a sync failed: the writer has nothing to
    /// wait for before it commits again (or, once the store failed, refuses the batch).
    pub(crate) fn idle(&self) -> bool {
        let p = &self.progress;
        p.synced.load(Ordering::SeqCst) >= p.issued.load(Ordering::SeqCst)
            || self.failure().is_some()
    }

    /// Why the store can no longer promise durability, once a sync failed: the writer then
    /// commits nothing more, and answers each write with this.
    pub(crate) fn failure(&self) -> Option<DbError> {
        match &*self.progress.state.borrow() {
            Synced::Failed(reason) => Some(DbError::Other(reason.clone())),
            Synced::Upto(_) => None,
        }
    }

    /// Rings after every sync: what the writer waits on, beside new writes, while a sync
    /// runs.
    pub(crate) fn done(&self) -> &Receiver<()> {
        &self.done
    }

    /// What a read that just ended must wait for: every commit begun before now, so that
    /// whatever commit the read saw is durable when the read's result is used.
    pub(crate) fn horizon(&self) -> u64 {
        self.progress.issued.load(Ordering::SeqCst)
    }

    /// Waits until commit `seq` is on disk (0: nothing to wait for).
    pub(crate) async fn wait(&self, seq: u64) -> Result<(), DbError> {
        if self.progress.synced.load(Ordering::SeqCst) >= seq {
            return Ok(());
        }
        let mut state = self.progress.state.subscribe();
        let reached = state
            .wait_for(|s| match s {
                Synced::Upto(n) => *n >= seq,
                Synced::Failed(_) => true,
            })
            .await
            .map_err(|_| DbError::Closed)?;
        match &*reached {
            Synced::Upto(_) => Ok(()),
            Synced::Failed(reason) => Err(DbError::Other(reason.clone())),
        }
    }
}

impl Progress {
    /// One sync covering `batches`, then their answers.
    fn sync_and_answer(&self, sync: &mut SyncFn, batches: Vec<Committed>) {
        let target = batches.iter().map(|b| b.seq).max().unwrap_or(0);
        let failed = match &*self.state.borrow() {
            Synced::Failed(reason) => Some(reason.clone()),
            Synced::Upto(_) => None,
        };
        let failed = failed.or_else(|| match sync() {
            Ok(()) => None,
            Err(e) => {
                tracing::error!(error = %e, "fsync of the SQLite WAL failed; the store answers errors until restarted");
                let reason = format!("the database could not be synced to disk ({e}); restart the server");
                self.state.send_replace(Synced::Failed(reason.clone()));
                Some(reason)
            }
        });
        if failed.is_none() {
            self.synced.fetch_max(target, Ordering::SeqCst);
            self.state.send_replace(Synced::Upto(target));
        }
        for batch in batches {
            let outcome = match &failed {
                None => batch.outcome,
                Some(reason) => Err(DbError::Other(reason.clone())),
            };
            for job in batch.jobs {
                job.finish(outcome.clone());
            }
        }
    }
}

/// Syncs once for every commit waiting, answers them, rings the writer; until the writer
/// is gone and every commit it sent was answered.
fn sync_loop(
    progress: &Progress,
    committed: &Receiver<Committed>,
    ring: &Sender<()>,
    mut sync: SyncFn,
) {
    while let Ok(first) = committed.recv() {
        let mut batches = vec![first];
        batches.extend(committed.try_iter());
        progress.sync_and_answer(&mut sync, batches);
        let _ = ring.try_send(());
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use tokio::sync::oneshot;

    use super::{SyncFn, WalSync};
    use crate::pool::{ClosureJob, Job, WriteJob};
    use crate::sql::{Conn, DbError};
    use crate::sqlite::SqliteConn;

    /// A sync that blocks while the test holds the gate's sender (dropping it opens the
    /// gate for good), and counts the syncs made.
    fn gated() -> (SyncFn, crossbeam_channel::Sender<()>, Arc<AtomicUsize>) {
        let (gate, waits) = crossbeam_channel::bounded::<()>(0);
        let count = Arc::new(AtomicUsize::new(0));
        let counted = count.clone();
        let sync: SyncFn = Box::new(move || {
            let _ = waits.recv();
            counted.fetch_add(1, Ordering::SeqCst);
            Ok(())
        });
        (sync, gate, count)
    }

    /// A write that ran (answering `n`), and where its answer arrives.
    fn ran(n: i64) -> (WriteJob, oneshot::Receiver<Result<i64, DbError>>) {
        let (tx, rx) = oneshot::channel();
        let f = move |_: &mut dyn Conn| Ok::<i64, DbError>(n);
        let mut job = Box::new(ClosureJob::new(Some(f), tx));
        let db = rusqlite::Connection::open_in_memory().expect("open");
        assert!(job.run(&mut SqliteConn(&db)));
        (job, rx)
    }

    fn commit(wal: &WalSync, job: WriteJob) -> u64 {
        let seq = wal.begin_commit();
        wal.end_commit(seq, vec![job], Ok(()));
        seq
    }

    #[tokio::test]
    async fn a_commit_is_answered_only_after_the_sync_that_covers_it() {
        let (sync, gate, count) = gated();
        let wal = WalSync::start(sync).expect("start");
        let (job, mut answer) = ran(7);
        let seq = commit(&wal, job);
        let read = tokio::time::timeout(Duration::from_millis(50), wal.wait(wal.horizon()));
        assert!(
            read.await.is_err(),
            "a read saw the commit durable before its sync"
        );
        assert!(answer.try_recv().is_err(), "answered before its sync");
        assert!(!wal.idle(), "the writer would commit again before the sync");
        drop(gate);
        assert_eq!(answer.await.expect("answered").expect("kept"), 7);
        wal.wait(seq).await.expect("durable");
        assert!(wal.idle());
        assert_eq!(count.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn one_sync_answers_every_commit_made_before_it() {
        let (sync, gate, count) = gated();
        let wal = WalSync::start(sync).expect("start");
        let answers: Vec<_> = (0..50)
            .map(|n| {
                let (job, answer) = ran(n);
                commit(&wal, job);
                answer
            })
            .collect();
        drop(gate);
        for (n, answer) in (0..).zip(answers) {
            assert_eq!(answer.await.expect("answered").expect("kept"), n);
        }
        let syncs = count.load(Ordering::SeqCst);
        assert!((1..=2).contains(&syncs), "{syncs} syncs for 50 commits");
    }

    #[tokio::test]
    async fn a_failed_sync_fails_every_write_and_read_then_and_after() {
        let sync: SyncFn = Box::new(|| Err(std::io::Error::other("EIO")));
        let wal = WalSync::start(sync).expect("start");
        let (job, answer) = ran(1);
        commit(&wal, job);
        let err = answer.await.expect("answered").expect_err("not durable");
        assert!(err.to_string().contains("EIO"), "{err}");
        let (job, answer) = ran(2);
        let later = commit(&wal, job);
        assert!(answer.await.expect("answered").is_err());
        assert!(wal.wait(later).await.is_err());
    }
}
