//! Writes that many requests make at once, run as one set of statements for all of them.
//!
//! Group commit (the `pool` module) puts concurrent writes in one transaction, but each write
//! still runs its own statements: on PostgreSQL every statement is a round trip, and under
//! load the round trips, not the rows, are what the server and the database spend their CPU
//! on (docs/benchmarks.md). A [`Coalescer`] gathers the requests of one kind that wait for
//! the database and hands them to [`Coalesced::run_all`] together, which reads what they
//! need once and writes their rows in a few multi-row statements.
//!
//! How a group forms: a request joins the pending list; when no group job of this coalescer
//! waits in the store's queue, it queues one. The job takes every pending request when a
//! database thread starts it, so requests gather while the database is busy (as group commit
//! does) and a lone request on an idle database waits for nothing.
//!
//! A group job is a repeatable write (it may run again after a rollback, on the same
//! requests). When `run_all` fails as a whole, nothing of it is kept and each of its requests
//! runs again alone, so one bad request never fails the others. When the commit itself fails,
//! every request of the group gets that error, as a lone write would: the commit's outcome is
//! then unknown, and running them again could act twice.

use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::oneshot;

use crate::sql::{Conn, DbError};
use crate::{Store, idempotency};

/// The results of a group: one per request, or the group's failure as a whole.
pub type GroupResults<C> =
    Result<Vec<Result<<C as Coalesced>::Output, <C as Coalesced>::Error>>, <C as Coalesced>::Error>;

/// A write request that runs together with the other requests of its kind.
pub trait Coalesced: Send + Sized + 'static {
    /// What one request gets.
    type Output: Send + 'static;
    /// Why one request (or the whole group) failed.
    type Error: From<DbError> + Send + 'static;

    /// Runs every request of the group in the current transaction; one result per request,
    /// in order. A request that fails must leave nothing behind. An `Err` undoes the whole
    /// group, whose requests then run again one by one.
    fn run_all(conn: &mut dyn Conn, items: &[Self]) -> GroupResults<Self>;
}

/// The requests not yet taken by a group job (each with where its answer goes), and whether
/// a group job waits for a thread.
struct Waiting<C: Coalesced> {
    items: Vec<C>,
    answers: Vec<Answer<C>>,
    queued: bool,
}

/// Where a request's answer goes.
type Answer<C> = oneshot::Sender<Result<<C as Coalesced>::Output, <C as Coalesced>::Error>>;

/// Why a group job failed: its run (nothing kept; each request may run alone), or the store
/// or the commit (the outcome is the same for every request).
enum GroupFailure<E> {
    Run(E),
    Store(DbError),
}

impl<E> From<DbError> for GroupFailure<E> {
    fn from(e: DbError) -> Self {
        Self::Store(e)
    }
}

/// Gathers the concurrent requests of one kind into groups (see the module).
pub struct Coalescer<C: Coalesced> {
    store: Store,
    waiting: Arc<Mutex<Waiting<C>>>,
}

impl<C: Coalesced> Clone for Coalescer<C> {
    fn clone(&self) -> Self {
        Self {
            store: self.store.clone(),
            waiting: self.waiting.clone(),
        }
    }
}

impl<C: Coalesced> std::fmt::Debug for Coalescer<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Coalescer")
            .field("kind", &std::any::type_name::<C>())
            .finish()
    }
}

/// Takes the lock even when a thread panicked holding it: the lists stay consistent (every
/// change to them is a push or a take).
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl<C: Coalesced> Coalescer<C> {
    /// A coalescer writing through `store`.
    pub fn new(store: Store) -> Self {
        Self {
            store,
            waiting: Arc::new(Mutex::new(Waiting {
                items: Vec::new(),
                answers: Vec::new(),
                queued: false,
            })),
        }
    }

    /// Runs `item` in a group with the requests of its kind waiting now; the answer comes
    /// after the commit that holds it. A keyed request (see [`idempotency::scope`]) runs
    /// alone, as a [`Store::write_repeatable`], which marks its key in its transaction.
    pub async fn run(&self, item: C) -> Result<C::Output, C::Error> {
        if idempotency::current().is_some() {
            return alone(&self.store, item).await;
        }
        let (answer, rx) = oneshot::channel();
        let queue = {
            let mut w = lock(&self.waiting);
            w.items.push(item);
            w.answers.push(answer);
            !std::mem::replace(&mut w.queued, true)
        };
        if queue {
            tokio::spawn(group_job(self.store.clone(), self.waiting.clone()));
        }
        rx.await.map_err(|_| C::Error::from(DbError::Closed))?
    }
}

/// Runs `item` alone, in its own write.
async fn alone<C: Coalesced>(store: &Store, item: C) -> Result<C::Output, C::Error> {
    store
        .write_repeatable(move |c| {
            C::run_all(c, std::slice::from_ref(&item))?
                .pop()
                .unwrap_or_else(|| Err(C::Error::from(no_result())))
        })
        .await
}

fn no_result() -> DbError {
    DbError::Other("a coalesced write gave no result for a request".into())
}

/// Queues one group job, which takes the pending requests when a database thread starts it,
/// and answers them after its commit.
async fn group_job<C: Coalesced>(store: Store, waiting: Arc<Mutex<Waiting<C>>>) {
    // The group's requests and their answers: taken at the job's first run, kept for its
    // later runs.
    type Group<C> = (Vec<C>, Vec<Answer<C>>);
    let taken: Arc<Mutex<Option<Group<C>>>> = Arc::new(Mutex::new(None));
    let (job_taken, job_waiting) = (taken.clone(), waiting.clone());
    let outcome = store
        .write_grouped(move |c| {
            let mut slot = lock(&job_taken);
            let (items, _) = slot.get_or_insert_with(|| {
                let mut w = lock(&job_waiting);
                w.queued = false;
                (std::mem::take(&mut w.items), std::mem::take(&mut w.answers))
            });
            C::run_all(c, items).map_err(GroupFailure::Run)
        })
        .await;
    let Some((items, answers)) = lock(&taken).take() else {
        // The job never ran (the store is closed). No other job was queued meanwhile, so
        // every pending request was waiting for this one: each gets the store's error.
        let mut w = lock(&waiting);
        w.queued = false;
        w.items.clear();
        for answer in w.answers.drain(..) {
            let _ = answer.send(Err(C::Error::from(DbError::Closed)));
        }
        return;
    };
    match outcome {
        Ok(results) if results.len() == answers.len() => {
            for (answer, result) in answers.into_iter().zip(results) {
                let _ = answer.send(result);
            }
        }
        Ok(_) => {
            for answer in answers {
                let _ = answer.send(Err(C::Error::from(no_result())));
            }
        }
        // The group as a whole failed and nothing of it was kept: each request alone.
        Err(GroupFailure::Run(_)) if items.len() > 1 => {
            for (item, answer) in items.into_iter().zip(answers) {
                let store = store.clone();
                tokio::spawn(async move {
                    let _ = answer.send(alone(&store, item).await);
                });
            }
        }
        Err(GroupFailure::Run(e)) => {
            if let Some(answer) = answers.into_iter().next() {
                let _ = answer.send(Err(e));
            }
        }
        // The commit failed, or the store: its outcome is the same for every request.
        Err(GroupFailure::Store(e)) => {
            for answer in answers {
                let _ = answer.send(Err(C::Error::from(e.clone())));
            }
        }
    }
}
