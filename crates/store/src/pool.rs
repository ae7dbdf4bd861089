//! The job protocol between async callers and the database threads, shared by both backends.
//!
//! Writes are closures run inside a transaction on a database thread. A thread takes every
//! write waiting in its queue (up to a batch limit), runs each under its own savepoint, and
//! commits them together: one commit, one fsync, many requests (group commit). Each caller is
//! answered only after the commit that holds its change, so a reply means durable.

use crate::sql::{Conn, DbError};

/// Called once the batch holding a write has committed (or failed to).
pub(crate) type Completion = Box<dyn FnOnce(Result<(), DbError>) + Send>;

/// A write: runs on the database thread; says whether its changes are kept and how to answer.
pub(crate) type WriteJob = Box<dyn FnOnce(&mut dyn Conn) -> (bool, Completion) + Send>;

/// A read: runs outside any explicit transaction and answers by itself.
pub(crate) type ReadJob = Box<dyn FnOnce(&mut dyn Conn) + Send>;

/// Most writes committed in one transaction.
pub(crate) const MAX_BATCH: usize = 256;

/// Runs a batch of writes with savepoints on `conn` and answers every caller after the commit.
///
/// `begin` and `commit` are the backend's statements. A single job runs without a savepoint
/// (its failure rolls the whole transaction back instead).
pub(crate) fn run_write_batch(conn: &mut dyn Conn, begin: &str, batch: Vec<WriteJob>) {
    let single = batch.len() == 1;
    if let Err(e) = conn.batch(begin) {
        // Dropping the jobs unblocks their callers with `DbError::Closed`.
        tracing::error!(error = %e, "could not begin a write transaction");
        drop(batch);
        return;
    }
    let mut completions: Vec<Completion> = Vec::with_capacity(batch.len());
    let mut any_kept = false;
    for job in batch {
        if !single && let Err(e) = conn.execute("SAVEPOINT job", &[]) {
            tracing::error!(error = %e, "could not open a savepoint");
        }
        let (ok, complete) = job(conn);
        if !single {
            // Single statements through the statement cache: this runs for every write.
            let undo = if ok {
                conn.execute("RELEASE SAVEPOINT job", &[])
            } else {
                conn.execute("ROLLBACK TO SAVEPOINT job", &[])
                    .and_then(|_| conn.execute("RELEASE SAVEPOINT job", &[]))
            };
            if let Err(e) = undo {
                tracing::error!(error = %e, "could not close a savepoint");
            }
        }
        any_kept |= ok;
        completions.push(complete);
    }
    let outcome = if any_kept {
        conn.batch("COMMIT")
    } else {
        conn.batch("ROLLBACK")
    };
    if outcome.is_err() {
        let _ = conn.batch("ROLLBACK");
    }
    for complete in completions {
        complete(outcome.clone());
    }
}
