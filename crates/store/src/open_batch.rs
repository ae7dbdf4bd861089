//! SQLite's group commit while the WAL is synced beside the writer: a write transaction
//! that takes writes one by one, for as long as the previous commit's sync runs.
//!
//! The writer does not commit while a sync is in flight (the next commit would only wait
//! for it, and commits made more often write the same pages to the WAL more often). It
//! opens the next transaction at once instead and runs each write as it arrives, so the
//! work of a batch overlaps the sync of the one before, and the batch holds every write
//! that arrived meanwhile, as it did when the writer itself waited for the disk.
//!
//! A write that fails must leave nothing behind while the others are kept, as in the
//! `pool` module's batches: repeatable writes run without a savepoint until one fails; then
//! the transaction is rolled back and those kept so far run again, each under its own
//! savepoint, as does every write after. A write that can run only once waits for the end
//! of the batch and runs then, under a savepoint, after the repeatable ones (as in the
//! `pool` module): no failure may roll it back once it ran.

use crate::pool::{WriteJob, run_in_savepoint};
use crate::sql::{Conn, DbError};

/// How the writes of the open transaction are run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// No savepoints: a failure rolls the whole transaction back and runs the kept writes
    /// again under savepoints.
    Fast,
    /// Each write under its own savepoint.
    Savepoints,
}

/// An open write transaction and the writes it holds.
pub(crate) struct OpenBatch {
    begin: &'static str,
    jobs: Vec<WriteJob>,
    /// Writes that can run only once, run at the end.
    once: Vec<WriteJob>,
    mode: Mode,
    any_kept: bool,
}

impl OpenBatch {
    /// Opens a write transaction with `begin`.
    pub(crate) fn begin(conn: &mut dyn Conn, begin: &'static str) -> Result<Self, DbError> {
        conn.batch(begin)?;
        Ok(Self {
            begin,
            jobs: Vec::new(),
            once: Vec::new(),
            mode: Mode::Fast,
            any_kept: false,
        })
    }

    /// Writes held.
    pub(crate) fn len(&self) -> usize {
        self.jobs.len() + self.once.len()
    }

    /// Runs `job` in the open transaction and holds it until the commit. Fails only when
    /// the transaction could not be started over; the jobs are then given back, to be
    /// answered with that error.
    pub(crate) fn push(
        &mut self,
        conn: &mut dyn Conn,
        mut job: WriteJob,
    ) -> Result<(), (DbError, Vec<WriteJob>)> {
        if !job.repeatable() {
            self.once.push(job);
            return Ok(());
        }
        match self.mode {
            Mode::Savepoints => {
                self.any_kept |= run_in_savepoint(conn, job.as_mut());
                self.jobs.push(job);
                Ok(())
            }
            Mode::Fast if job.run(conn) => {
                self.any_kept = true;
                self.jobs.push(job);
                Ok(())
            }
            Mode::Fast => self.start_over(conn, job),
        }
    }

    /// A write failed without a savepoint: rolls back, and runs the kept writes and this
    /// one again under savepoints. When it was the first write, its failure stands as it
    /// is: it saw nothing the others did.
    fn start_over(
        &mut self,
        conn: &mut dyn Conn,
        mut failed: WriteJob,
    ) -> Result<(), (DbError, Vec<WriteJob>)> {
        self.mode = Mode::Savepoints;
        let restart = conn.batch("ROLLBACK").and_then(|()| conn.batch(self.begin));
        if let Err(e) = restart {
            let mut jobs = std::mem::take(&mut self.jobs);
            jobs.push(failed);
            jobs.append(&mut self.once);
            return Err((e, jobs));
        }
        self.any_kept = false;
        if !self.jobs.is_empty() {
            for job in &mut self.jobs {
                self.any_kept |= run_in_savepoint(conn, job.as_mut());
            }
            self.any_kept |= run_in_savepoint(conn, failed.as_mut());
        }
        self.jobs.push(failed);
        Ok(())
    }

    /// Commits with `commit` and gives back the writes with the outcome their callers are
    /// to be answered with once it is durable. When no write was kept, rolls back and
    /// answers them itself (there is nothing to wait for): `None`.
    pub(crate) fn end(
        mut self,
        conn: &mut dyn Conn,
        commit: impl FnOnce(&mut dyn Conn) -> Result<(), DbError>,
    ) -> Option<(Vec<WriteJob>, Result<(), DbError>)> {
        let single = self.jobs.is_empty() && self.once.len() == 1;
        for mut job in std::mem::take(&mut self.once) {
            self.any_kept |= if single {
                job.run(conn)
            } else {
                run_in_savepoint(conn, job.as_mut())
            };
            self.jobs.push(job);
        }
        if !self.any_kept {
            let outcome = conn.batch("ROLLBACK");
            for job in self.jobs {
                job.finish(outcome.clone());
            }
            return None;
        }
        let outcome = commit(conn);
        if outcome.is_err() {
            let _ = conn.batch("ROLLBACK");
        }
        Some((self.jobs, outcome))
    }
}

#[cfg(test)]
mod tests {
    use tokio::sync::oneshot;

    use super::OpenBatch;
    use crate::params;
    use crate::pool::{ClosureJob, Repeatable, WriteJob};
    use crate::sql::{Conn, DbError};
    use crate::sqlite::SqliteConn;

    type Answer = oneshot::Receiver<Result<(), DbError>>;

    fn insert(c: &mut dyn Conn, k: &str) -> Result<(), DbError> {
        c.execute("INSERT INTO t (k) VALUES ($1)", params![k])
            .map(|_| ())
    }

    fn repeatable(k: &'static str, fail: bool) -> (WriteJob, Answer) {
        let (tx, rx) = oneshot::channel();
        let f = move |c: &mut dyn Conn| {
            insert(c, k)?;
            if fail {
                return Err(DbError::Other(format!("{k} refused")));
            }
            Ok(())
        };
        (Box::new(ClosureJob::new(Repeatable(f), tx)), rx)
    }

    fn once(k: &'static str) -> (WriteJob, Answer) {
        let (tx, rx) = oneshot::channel();
        let f = move |c: &mut dyn Conn| insert(c, k);
        (Box::new(ClosureJob::new(Some(f), tx)), rx)
    }

    /// An in-memory database with the table the writes insert into.
    fn table() -> rusqlite::Connection {
        let db = rusqlite::Connection::open_in_memory().expect("open");
        db.execute_batch("CREATE TABLE t (k TEXT PRIMARY KEY)")
            .expect("table");
        db
    }

    fn keys(c: &mut dyn Conn) -> Vec<String> {
        c.query("SELECT k FROM t ORDER BY k", params![])
            .expect("read")
            .iter()
            .map(|r| r.text(0).expect("k"))
            .collect()
    }

    #[test]
    fn a_failed_write_leaves_nothing_and_the_batch_keeps_the_others() {
        let db = table();
        let c = &mut SqliteConn(&db);
        let mut open = OpenBatch::begin(c, "BEGIN IMMEDIATE").expect("begin");
        let mut answers = Vec::new();
        for (job, answer) in [
            repeatable("a", false),
            once("o"),
            repeatable("bad", true),
            // The key the failed write wrote: free again.
            repeatable("bad2", false),
            repeatable("a", false),
            repeatable("c", false),
        ] {
            open.push(c, job).map_err(|(e, _)| e).expect("push");
            answers.push(answer);
        }
        assert_eq!(open.len(), 6);
        let (jobs, outcome) = open
            .end(c, |c| c.batch("COMMIT"))
            .expect("something was kept");
        outcome.clone().expect("committed");
        for job in jobs {
            job.finish(outcome.clone());
        }
        let got: Vec<bool> = answers
            .into_iter()
            .map(|mut a| a.try_recv().expect("answered").is_ok())
            .collect();
        assert_eq!(got, [true, true, false, true, false, true]);
        assert_eq!(keys(c), ["a", "bad2", "c", "o"]);
    }

    #[test]
    fn a_batch_of_failures_rolls_back_and_answers_at_once() {
        let db = table();
        let c = &mut SqliteConn(&db);
        let mut open = OpenBatch::begin(c, "BEGIN IMMEDIATE").expect("begin");
        let (job, mut answer) = repeatable("x", true);
        open.push(c, job).map_err(|(e, _)| e).expect("push");
        assert!(open.end(c, |c| c.batch("COMMIT")).is_none());
        assert!(answer.try_recv().expect("answered").is_err());
        assert!(keys(c).is_empty());
    }
}
