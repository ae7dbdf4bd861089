//! The job protocol between async callers and the database threads, shared by both backends.
//!
//! Writes are closures run inside a transaction on a database thread. A thread takes every
//! write waiting in its queue (up to a batch limit) and commits them together: one commit,
//! one fsync, many requests (group commit). Each caller is answered only after the commit
//! that holds its change, so a reply means durable.
//!
//! A write that fails must leave nothing behind, while the others of its batch are kept.
//! Two kinds of job get that differently:
//!
//! - A *repeatable* job (a closure that can run again and touches nothing but the
//!   connection) runs first, without a savepoint: savepoints are what group commit costs
//!   most on SQLite (every page a job touches is copied to the sub-journal again for each
//!   job). When one of them fails, the whole transaction is rolled back and the repeatable
//!   jobs run again, each under its own savepoint, so the result is exactly what savepoints
//!   would have given: a failed job leaves nothing, the others see only kept changes.
//! - A *once* job (a closure that can run only once) always runs under its own savepoint.

use crate::sql::{Conn, DbError};

/// A write as the database thread sees it.
pub(crate) trait Job: Send {
    /// Runs the write on `conn`; says whether its changes are kept. A repeatable job may be
    /// run again after its changes were rolled back; only its last run counts.
    fn run(&mut self, conn: &mut dyn Conn) -> bool;

    /// Whether [`Job::run`] may be called more than once.
    fn repeatable(&self) -> bool;

    /// Whether the job writes for a group of requests (see the `coalesce` module): its
    /// debits are then deferred to the end of the batch even when it is the batch's only
    /// write.
    fn grouped(&self) -> bool {
        false
    }

    /// Whether the caller is answered as soon as the commit returns, before the sync that
    /// makes it durable (SQLite with the WAL synced beside the writer; elsewhere a commit is
    /// durable when it returns). Only background work that acts on nothing outside the
    /// store before it waited for that sync asks for it (see [`Store::write_unsynced`]).
    ///
    /// [`Store::write_unsynced`]: crate::Store::write_unsynced
    fn before_sync(&self) -> bool {
        false
    }

    /// Answers the caller with the outcome of the commit (after its last run).
    fn finish(self: Box<Self>, commit: Result<(), DbError>);
}

/// A write queued for a database thread.
pub(crate) type WriteJob = Box<dyn Job>;

/// A read: runs outside any explicit transaction and answers by itself.
pub(crate) type ReadJob = Box<dyn FnOnce(&mut dyn Conn) + Send>;

/// Most writes committed in one transaction.
pub(crate) const MAX_BATCH: usize = 256;

/// `first` and every write waiting behind it in `rx`, up to [`MAX_BATCH`]: the writes of one
/// transaction.
pub(crate) fn batch(rx: &crossbeam_channel::Receiver<WriteJob>, first: WriteJob) -> Vec<WriteJob> {
    let mut batch = vec![first];
    while batch.len() < MAX_BATCH {
        match rx.try_recv() {
            Ok(job) => batch.push(job),
            Err(_) => break,
        }
    }
    batch
}

/// A caller's closure, its last result and where to answer. `F` is an `FnOnce` held in an
/// `Option` (a once job) or an `FnMut` (a repeatable job).
pub(crate) struct ClosureJob<T, E, F> {
    f: F,
    result: Option<Result<T, E>>,
    answer: Option<tokio::sync::oneshot::Sender<Result<T, E>>>,
    /// See [`Job::grouped`].
    grouped: bool,
    /// See [`Job::before_sync`].
    before_sync: bool,
}

impl<T, E, F> ClosureJob<T, E, F> {
    pub(crate) fn new(f: F, answer: tokio::sync::oneshot::Sender<Result<T, E>>) -> Self {
        Self {
            f,
            result: None,
            answer: Some(answer),
            grouped: false,
            before_sync: false,
        }
    }

    /// Answers the caller at the commit, before its sync (see [`Job::before_sync`]).
    pub(crate) fn answered_before_sync(mut self) -> Self {
        self.before_sync = true;
        self
    }

    /// Marks the job as the write of a group of requests (see [`Job::grouped`]).
    pub(crate) fn for_group(mut self) -> Self {
        self.grouped = true;
        self
    }

    fn keep(&mut self, result: Result<T, E>) -> bool {
        let kept = result.is_ok();
        self.result = Some(result);
        kept
    }

    /// The caller's answer: its result if the commit held, the commit's error otherwise.
    fn answer(&mut self, commit: Result<(), DbError>)
    where
        E: From<DbError>,
    {
        // A job that never ran is dropped unanswered: its caller sees `DbError::Closed`.
        let (Some(result), Some(answer)) = (self.result.take(), self.answer.take()) else {
            return;
        };
        let reply = match (result, commit) {
            (Ok(v), Ok(())) => Ok(v),
            (Ok(_), Err(e)) => Err(E::from(e)),
            (Err(e), _) => Err(e),
        };
        let _ = answer.send(reply);
    }
}

impl<T, E, F> Job for ClosureJob<T, E, Option<F>>
where
    F: FnOnce(&mut dyn Conn) -> Result<T, E> + Send,
    T: Send,
    E: From<DbError> + Send,
{
    fn run(&mut self, conn: &mut dyn Conn) -> bool {
        match self.f.take() {
            Some(f) => {
                let result = f(conn);
                self.keep(result)
            }
            None => false,
        }
    }

    fn repeatable(&self) -> bool {
        false
    }

    fn finish(mut self: Box<Self>, commit: Result<(), DbError>) {
        self.answer(commit);
    }
}

/// The closure of a repeatable job (a newtype, so it cannot be mistaken for a once job).
pub(crate) struct Repeatable<F>(pub(crate) F);

impl<T, E, F> Job for ClosureJob<T, E, Repeatable<F>>
where
    F: FnMut(&mut dyn Conn) -> Result<T, E> + Send,
    T: Send,
    E: From<DbError> + Send,
{
    fn run(&mut self, conn: &mut dyn Conn) -> bool {
        let result = (self.f.0)(conn);
        self.keep(result)
    }

    fn repeatable(&self) -> bool {
        true
    }

    fn grouped(&self) -> bool {
        self.grouped
    }

    fn before_sync(&self) -> bool {
        self.before_sync
    }

    fn finish(mut self: Box<Self>, commit: Result<(), DbError>) {
        self.answer(commit);
    }
}

/// Runs `job` under a savepoint (undone if the job fails); says whether it was kept.
pub(crate) fn run_in_savepoint(conn: &mut dyn Conn, job: &mut dyn Job) -> bool {
    if let Err(e) = conn.execute("SAVEPOINT job", &[]) {
        tracing::error!(error = %e, "could not open a savepoint");
    }
    let kept = job.run(conn);
    // Single statements through the statement cache: this runs for every write.
    let undo = if kept {
        conn.execute("RELEASE SAVEPOINT job", &[])
    } else {
        conn.execute("ROLLBACK TO SAVEPOINT job", &[])
            .and_then(|_| conn.execute("RELEASE SAVEPOINT job", &[]))
    };
    if let Err(e) = undo {
        tracing::error!(error = %e, "could not close a savepoint");
    }
    kept
}

/// How many times a repeatable write that met a lock conflict (PostgreSQL: a deadlock with
/// another batch, a serialization failure) is run again alone before its caller gets the
/// error. Group commit puts unrelated writes in one transaction, so two batches can lock the
/// same rows in opposite orders; the database breaks the cycle by failing one of them.
const CONTENTION_TRIES: usize = 3;

/// Runs a batch of writes on `conn` and answers every caller after the commit.
///
/// `begin` is the backend's statement that opens a write transaction. A batch of one job
/// runs without a savepoint (its failure rolls the whole transaction back instead). A
/// repeatable job that failed on a lock conflict runs again alone, in its own transaction,
/// after the batch committed.
pub(crate) fn run_write_batch(conn: &mut dyn Conn, begin: &str, batch: Vec<WriteJob>) {
    let contended = run_batch_once(conn, begin, batch);
    for mut job in contended {
        let mut outcome = Ok(());
        for attempt in 1..=CONTENTION_TRIES {
            if let Err(e) = conn.batch(begin) {
                outcome = Err(e);
                break;
            }
            let _ = conn.take_contention();
            let kept = job.run(conn);
            let again = !kept && conn.take_contention() && attempt < CONTENTION_TRIES;
            outcome = if kept {
                conn.batch("COMMIT")
            } else {
                conn.batch("ROLLBACK")
            };
            if outcome.is_err() {
                let _ = conn.batch("ROLLBACK");
            }
            if !again {
                break;
            }
        }
        job.finish(outcome);
    }
}

/// Runs `job` and says whether it was kept and whether it failed on a lock conflict.
fn run_marked(conn: &mut dyn Conn, job: &mut dyn Job, savepoint: bool) -> (bool, bool) {
    let _ = conn.take_contention();
    let mark = conn.deferred_debits().map(|d| d.mark());
    let kept = if savepoint {
        run_in_savepoint(conn, job)
    } else {
        job.run(conn)
    };
    // A write undone takes its deferred debits with it.
    if !kept && let (Some(mark), Some(d)) = (mark, conn.deferred_debits()) {
        d.undo_to(mark);
    }
    (kept, !kept && conn.take_contention())
}

/// One transaction for the whole batch; answers every job but the repeatable ones that
/// failed on a lock conflict, which it gives back.
fn run_batch_once(conn: &mut dyn Conn, begin: &str, batch: Vec<WriteJob>) -> Vec<WriteJob> {
    let (mut repeatable, mut once): (Vec<WriteJob>, Vec<WriteJob>) =
        batch.into_iter().partition(|job| job.repeatable());
    if let Err(e) = conn.batch(begin) {
        // Dropping the jobs unblocks their callers with `DbError::Closed`.
        tracing::error!(error = %e, "could not begin a write transaction");
        return Vec::new();
    }
    let mut any_kept = false;
    // Repeatable jobs that met a lock conflict: run again after this transaction.
    let mut contended = vec![false; repeatable.len()];
    // Debits wait for the end of a batch of repeatable writes (see the `debits` module): a
    // once write could not run again if the settling found the credit spent meanwhile.
    let deferred = conn.defer_debits(
        once.is_empty() && (repeatable.len() > 1 || repeatable.iter().any(|j| j.grouped())),
    );
    if once.is_empty() && repeatable.len() == 1 {
        let (kept, conflict) = run_marked(conn, repeatable[0].as_mut(), false);
        any_kept = kept;
        contended[0] = conflict;
    } else if !repeatable.is_empty() {
        // Fast path: no savepoints, stopping at the first failure.
        let all_kept = repeatable.iter_mut().all(|job| job.run(conn));
        if all_kept {
            any_kept = true;
        } else {
            // Undo the whole attempt and give every job the savepoint semantics.
            if let Some(d) = conn.deferred_debits() {
                d.clear();
            }
            let restart = conn.batch("ROLLBACK").and_then(|()| conn.batch(begin));
            if let Err(e) = restart {
                tracing::error!(error = %e, "could not restart a write transaction");
                conn.defer_debits(false);
                return Vec::new();
            }
            for (job, conflict) in repeatable.iter_mut().zip(contended.iter_mut()) {
                let (kept, met) = run_marked(conn, job.as_mut(), true);
                any_kept |= kept;
                *conflict = met;
            }
        }
    }
    let single = repeatable.is_empty() && once.len() == 1;
    for job in &mut once {
        any_kept |= if single {
            job.run(conn)
        } else {
            run_in_savepoint(conn, job.as_mut())
        };
    }
    // The deferred debits last, so the balance rows are locked only from here to the commit.
    let settled = if deferred && any_kept {
        let _ = conn.take_contention();
        match crate::billing::settle_deferred(conn) {
            Ok(settled) => Ok(settled),
            Err(_) if conn.take_contention() => Ok(false),
            Err(e) => Err(e),
        }
    } else {
        Ok(true)
    };
    conn.defer_debits(false);
    let outcome = match settled {
        Ok(true) if any_kept => conn.batch("COMMIT"),
        Ok(true) => conn.batch("ROLLBACK"),
        // The credit was spent since the batch read it: every write runs again alone,
        // debiting at once.
        Ok(false) => {
            let _ = conn.batch("ROLLBACK");
            contended = vec![true; repeatable.len()];
            Ok(())
        }
        Err(e) => Err(e),
    };
    if outcome.is_err() {
        let _ = conn.batch("ROLLBACK");
    }
    let mut again = Vec::new();
    for (job, conflict) in repeatable.into_iter().zip(contended) {
        if conflict && outcome.is_ok() {
            again.push(job);
        } else {
            job.finish(outcome.clone());
        }
    }
    for job in once {
        job.finish(outcome.clone());
    }
    again
}
