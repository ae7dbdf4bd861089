//! The one database layer of dialtone: SQLite (embedded default) and PostgreSQL (scaled
//! out) behind one [`Store`], migrations per backend, and the repository functions every
//! feature uses.
//!
//! Repository functions are plain synchronous functions over a [`Conn`]; callers compose
//! them inside [`Store::write`] (one transaction, group-committed with other requests) or
//! [`Store::read`]. This crate owns SQL and nothing above it: no HTTP, no JSON shapes.

pub mod accounts;
pub mod audio_files;
pub mod billing;
pub mod calls;
pub mod coalesce;
pub mod console_sessions;
pub mod debits;
pub mod deliveries;
pub mod delivery_log;
pub mod end_users;
pub mod events;
#[cfg(test)]
mod failed_sync_tests;
pub mod idempotency;
pub mod inbound_parts;
pub mod key_cache;
pub mod migrate;
pub mod numbers;
mod open_batch;
mod pg_queues;
mod pool;
mod postgres;
pub mod rates;
pub mod recordings;
pub mod retention;
pub mod runs;
pub mod scenarios;
pub mod search;
mod shared_read;
pub mod sip_trunks;
mod slices;
pub mod smpp_receipts;
pub mod sms;
pub mod sms_parts;
pub mod sms_queue;
pub mod sql;
mod sqlite;
pub mod tasks;
pub mod test_schema;
#[cfg(test)]
mod unsynced_tests;
mod wal_checkpoints;
mod wal_sync;
mod wal_writes;
pub mod webhooks;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crossbeam_channel::Sender;

pub use sql::{Conn, DbError, Dialect, Row, SqlBuilder, Value};
pub use sqlite::Synchronous;

use pool::{ClosureJob, ReadJob, Repeatable, WriteJob};

/// Where the data lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DatabaseUrl {
    /// A SQLite file.
    Sqlite(PathBuf),
    /// A PostgreSQL connection string (`postgres://...`).
    Postgres(String),
}

impl DatabaseUrl {
    /// Parses `sqlite:PATH`, `sqlite://PATH` or `postgres://...` / `postgresql://...`.
    pub fn parse(url: &str) -> Result<Self, String> {
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            return Ok(Self::Postgres(url.to_owned()));
        }
        if let Some(path) = url
            .strip_prefix("sqlite://")
            .or_else(|| url.strip_prefix("sqlite:"))
        {
            let path = path.split('?').next().unwrap_or_default();
            if path.is_empty() || path == ":memory:" {
                return Err(
                    "a SQLite URL needs a file path, such as sqlite:./dialtone-data/dialtone.db"
                        .into(),
                );
            }
            return Ok(Self::Sqlite(PathBuf::from(path)));
        }
        Err(format!(
            "unsupported database URL {url:?}: use sqlite:PATH or postgres://..."
        ))
    }
}

/// Tuning of the database threads.
#[derive(Debug, Clone)]
pub struct StoreOptions {
    /// Reader threads on SQLite; connections on PostgreSQL.
    pub connections: usize,
    /// SQLite commit durability.
    pub synchronous: Synchronous,
}

/// SQLite's reader threads when none are configured.
const SQLITE_READERS: usize = 4;

impl StoreOptions {
    /// Connections when none are configured: 4 SQLite readers; on PostgreSQL one connection
    /// per core of this machine, from 2 to 4. Each PostgreSQL connection is a backend process
    /// running a group of writes at a time; with more backends than cores (PostgreSQL on
    /// the same machine, the usual small deployment) they only contend for the cores and
    /// split the requests into smaller groups. On 2 cores, 2 connections against 4 accepted
    /// 8-32% more SMS with 15-25% less server and 20-32% less PostgreSQL CPU per SMS
    /// (docs/benchmarks.md, "PostgreSQL: as many connections as cores"). Two at least: the
    /// background work may take all connections but one (`pg_queues`), and with a single
    /// connection it may take that one while requests wait.
    pub fn default_connections(url: &DatabaseUrl) -> usize {
        match url {
            DatabaseUrl::Sqlite(_) => SQLITE_READERS,
            DatabaseUrl::Postgres(_) => std::thread::available_parallelism()
                .map_or(2, std::num::NonZeroUsize::get)
                .clamp(2, 4),
        }
    }
}

impl Default for StoreOptions {
    fn default() -> Self {
        Self {
            connections: SQLITE_READERS,
            synchronous: Synchronous::Full,
        }
    }
}

/// A handle on the database; cheap to clone, shared by every request and worker.
#[derive(Clone)]
pub struct Store {
    writes: Sender<WriteJob>,
    /// Where [`Store::background`] sends its writes: on PostgreSQL a queue of their own,
    /// on SQLite the writer's one queue.
    background: Sender<WriteJob>,
    /// Whose writes this handle makes: requests' or background work's.
    lane: Lane,
    reads: Sender<ReadJob>,
    /// SQLite only: connections for [`Store::lookup`] on the caller's thread.
    inline: Option<Arc<sqlite::InlineReaders>>,
    dialect: Dialect,
    /// See [`Store::writes_in_flight`].
    in_flight: Arc<AtomicUsize>,
    /// SQLite only: see [`Store::checkpoints`].
    checkpoints: Option<Arc<wal_checkpoints::CheckpointCounts>>,
    /// SQLite with [`Synchronous::Full`]: the WAL's syncs, which answers and reads wait for
    /// (see the `wal_sync` module).
    wal_sync: Option<Arc<wal_sync::WalSync>>,
}

/// Checkpoints run on a SQLite database since it was opened (see the `wal_checkpoints`
/// module): most by the checkpointer thread, a few by the writer to start the WAL over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CheckpointStats {
    /// Run by the checkpointer thread, beside the writer.
    pub background: u64,
    /// Run by the writer thread.
    pub writer: u64,
}

/// Counts a write from its submission until its caller has the answer (or gave up waiting).
struct InFlight<'a>(&'a AtomicUsize);

impl<'a> InFlight<'a> {
    fn enter(count: &'a AtomicUsize) -> Self {
        count.fetch_add(1, Ordering::Relaxed);
        Self(count)
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A commit [`Store::write_unsynced`] answered before it was on disk: what its caller waits
/// on before acting outside the store on it.
#[must_use = "the write may not be durable yet: wait for `synced` before acting on it"]
pub struct Unsynced {
    wal_sync: Option<Arc<wal_sync::WalSync>>,
    seq: u64,
}

impl Unsynced {
    /// Waits until the commit is on disk (at once where a commit is durable when it
    /// returns: PostgreSQL, SQLite with `Synchronous::Normal`).
    pub async fn synced(self) -> Result<(), DbError> {
        wait_durable(self.wal_sync.as_deref(), self.seq).await
    }
}

/// Waits until commit `seq` is on disk (see the `wal_sync` module); at once without a WAL
/// synced beside the writer (PostgreSQL, `Synchronous::Normal`) and for `seq` 0.
async fn wait_durable(wal_sync: Option<&wal_sync::WalSync>, seq: u64) -> Result<(), DbError> {
    match wal_sync {
        Some(wal_sync) if seq > 0 => wal_sync.wait(seq).await,
        _ => Ok(()),
    }
}

/// Whose writes a [`Store`] handle makes (see [`Store::background`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lane {
    Requests,
    Background,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("dialect", &self.dialect)
            .finish()
    }
}

impl Store {
    /// Opens the database and starts its threads (does not migrate: see [`migrate::run`]).
    pub async fn open(url: &DatabaseUrl, options: &StoreOptions) -> Result<Self, DbError> {
        let url = url.clone();
        let options = options.clone();
        tokio::task::spawn_blocking(move || Self::open_blocking(&url, &options))
            .await
            .map_err(|e| DbError::Other(e.to_string()))?
    }

    fn open_blocking(url: &DatabaseUrl, options: &StoreOptions) -> Result<Self, DbError> {
        Self::open_with(url, options, None)
    }

    /// Opens the store; on SQLite with `wal_file_sync` as the sync of its WAL when given
    /// (tests hold it back), else [`wal_sync::WalSync::wal_file`].
    fn open_with(
        url: &DatabaseUrl,
        options: &StoreOptions,
        wal_file_sync: Option<wal_sync::SyncFn>,
    ) -> Result<Self, DbError> {
        let (writes, background, reads, inline, checkpoints, wal_sync, dialect) = match url {
            DatabaseUrl::Sqlite(path) => {
                let counts = Arc::new(wal_checkpoints::CheckpointCounts::default());
                let sync = wal_file_sync.unwrap_or_else(|| wal_sync::WalSync::wal_file(path));
                let started = sqlite::start(
                    path,
                    options.connections,
                    options.synchronous,
                    counts.clone(),
                    sync,
                )?;
                let inline = sqlite::InlineReaders::new(path, options.synchronous);
                (
                    started.writes.clone(),
                    started.writes,
                    started.reads,
                    Some(Arc::new(inline)),
                    Some(counts),
                    started.wal_sync,
                    Dialect::Sqlite,
                )
            }
            DatabaseUrl::Postgres(url) => {
                let started = postgres::start(url, options.connections)?;
                (
                    started.writes,
                    started.background,
                    started.reads,
                    None,
                    None,
                    None,
                    Dialect::Postgres,
                )
            }
        };
        Ok(Self {
            writes,
            background,
            lane: Lane::Requests,
            reads,
            inline,
            dialect,
            in_flight: Arc::default(),
            checkpoints,
            wal_sync,
        })
    }

    /// The same store for background work (the workers' ticks): its writes are never
    /// committed in one transaction with requests' writes, so a request's answer does not
    /// wait for a worker's statements, and they never take every connection while requests
    /// wait (PostgreSQL; see `pg_queues`). On SQLite the one writer takes both in turn: there
    /// the SMS worker sizes its own share (`sms::pacing`), and holding background work
    /// back was measured and not kept (docs/benchmarks.md).
    pub fn background(&self) -> Store {
        Store {
            lane: Lane::Background,
            ..self.clone()
        }
    }

    /// Which backend this is.
    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    /// The checkpoints run so far (SQLite; `None` on PostgreSQL, which has its own).
    pub fn checkpoints(&self) -> Option<CheckpointStats> {
        self.checkpoints.as_ref().map(|c| CheckpointStats {
            background: c.background.load(Ordering::Relaxed),
            writer: c.writer.load(Ordering::Relaxed),
        })
    }

    /// Runs `f` in a transaction. The answer comes after the commit that holds the change,
    /// so an `Ok` is durable. An `Err` from `f` undoes everything `f` did.
    pub async fn write<T, E, F>(&self, f: F) -> Result<T, E>
    where
        F: FnOnce(&mut dyn Conn) -> Result<T, E> + Send + 'static,
        T: Send + 'static,
        E: From<DbError> + Send + 'static,
    {
        let keyed = idempotency::current();
        let f = move |conn: &mut dyn Conn| within_keyed_request(conn, keyed.as_ref(), f);
        self.submit(|tx| Box::new(ClosureJob::new(Some(f), tx)))
            .await
    }

    /// Like [`Store::write`], for the hot paths: `f` may run more than once (its changes
    /// rolled back in between), so it must do nothing but statements on the connection and
    /// build its result from them. In exchange it skips the per-write savepoint of a group
    /// commit unless a write of its batch fails (see the `pool` module).
    pub async fn write_repeatable<T, E, F>(&self, f: F) -> Result<T, E>
    where
        F: FnMut(&mut dyn Conn) -> Result<T, E> + Send + 'static,
        T: Send + 'static,
        E: From<DbError> + Send + 'static,
    {
        self.submit_repeatable(f, false).await
    }

    /// Like [`Store::write_repeatable`], for background work that loops on its own
    /// writes: answered as soon as the commit returns, before the sync that makes it
    /// durable, so its next write runs while the disk syncs (on SQLite, in the writer's
    /// idle time, instead of in front of the requests that arrive once that sync answered
    /// them). Nothing is shown before it is durable all the same: every read waits for the
    /// syncs of what it saw. The caller must not act outside the store on the result (send
    /// anything to a network, answer anyone) before [`Unsynced::synced`] returned.
    pub async fn write_unsynced<T, E, F>(&self, f: F) -> Result<(T, Unsynced), E>
    where
        F: FnMut(&mut dyn Conn) -> Result<T, E> + Send + 'static,
        T: Send + 'static,
        E: From<DbError> + Send + 'static,
    {
        let value = self.submit_repeatable(f, true).await?;
        // Answered after its commit began: every commit up to the horizon now covers it.
        let seq = Self::read_horizon(self.wal_sync.as_deref());
        Ok((
            value,
            Unsynced {
                wal_sync: self.wal_sync.clone(),
                seq,
            },
        ))
    }

    /// Queues `f` as a repeatable write within the caller's idempotent request, if any;
    /// answered at its commit when `before_sync` (see [`Store::write_unsynced`]), else once
    /// that commit is durable.
    async fn submit_repeatable<T, E, F>(&self, f: F, before_sync: bool) -> Result<T, E>
    where
        F: FnMut(&mut dyn Conn) -> Result<T, E> + Send + 'static,
        T: Send + 'static,
        E: From<DbError> + Send + 'static,
    {
        let keyed = idempotency::current();
        let mut f = f;
        let f = move |conn: &mut dyn Conn| within_keyed_request(conn, keyed.as_ref(), &mut f);
        self.submit(|tx| {
            let job = ClosureJob::new(Repeatable(f), tx);
            Box::new(if before_sync {
                job.answered_before_sync()
            } else {
                job
            })
        })
        .await
    }

    /// The write of a group of requests (see the `coalesce` module): repeatable, and its
    /// debits are deferred to the end of its batch on PostgreSQL even when it is alone there,
    /// since it debits for many requests.
    pub(crate) async fn write_grouped<T, E, F>(&self, f: F) -> Result<T, E>
    where
        F: FnMut(&mut dyn Conn) -> Result<T, E> + Send + 'static,
        T: Send + 'static,
        E: From<DbError> + Send + 'static,
    {
        self.submit(|tx| Box::new(ClosureJob::new(Repeatable(f), tx).for_group()))
            .await
    }

    /// Queues the write `make` builds around the answer channel, and waits for the answer,
    /// which comes once the commit that holds it is durable.
    async fn submit<T, E>(
        &self,
        make: impl FnOnce(tokio::sync::oneshot::Sender<Result<T, E>>) -> WriteJob,
    ) -> Result<T, E>
    where
        E: From<DbError>,
    {
        let (tx, rx) = tokio::sync::oneshot::channel::<Result<T, E>>();
        let _counted = InFlight::enter(&self.in_flight);
        let queue = match self.lane {
            Lane::Requests => &self.writes,
            Lane::Background => &self.background,
        };
        queue.send(make(tx)).map_err(|_| E::from(DbError::Closed))?;
        rx.await.map_err(|_| E::from(DbError::Closed))?
    }

    /// Waits until commit `seq` is on disk (see the `wal_sync` module); at once on
    /// PostgreSQL and with [`Synchronous::Normal`].
    async fn durable(&self, seq: u64) -> Result<(), DbError> {
        wait_durable(self.wal_sync.as_deref(), seq).await
    }

    /// The commit a read that ends now must see durable before its result is used.
    fn read_horizon(wal_sync: Option<&wal_sync::WalSync>) -> u64 {
        wal_sync.map_or(0, wal_sync::WalSync::horizon)
    }

    /// Writes submitted and not yet answered: queued, in the transaction being run, or
    /// waiting for its commit. A background worker sizes its batches by it, since a large
    /// batch while requests wait holds them behind it (SQLite has a single writer).
    pub fn writes_in_flight(&self) -> usize {
        self.in_flight.load(Ordering::Relaxed)
    }

    /// Runs `f` on a reader connection (no explicit transaction). The result is given once
    /// every commit it may have seen is durable.
    pub async fn read<T, E, F>(&self, f: F) -> Result<T, E>
    where
        F: FnOnce(&mut dyn Conn) -> Result<T, E> + Send + 'static,
        T: Send + 'static,
        E: From<DbError> + Send + 'static,
    {
        let (tx, rx) = tokio::sync::oneshot::channel::<(Result<T, E>, u64)>();
        let wal_sync = self.wal_sync.clone();
        let job: ReadJob = Box::new(move |conn: &mut dyn Conn| {
            let result = f(conn);
            let _ = tx.send((result, Self::read_horizon(wal_sync.as_deref())));
        });
        self.reads.send(job).map_err(|_| E::from(DbError::Closed))?;
        let (result, horizon) = rx.await.map_err(|_| E::from(DbError::Closed))?;
        self.durable(horizon).await.map_err(E::from)?;
        result
    }

    /// A point read: `f` must read an indexed row or a few (microseconds of work), such as
    /// the account of an API key or the rate of a destination. On SQLite it runs on the
    /// calling thread, sparing the switch to a reader thread and back, which costs more than
    /// such a query; on PostgreSQL (a round trip anyway) it is [`Store::read`]. Anything
    /// that may scan belongs in [`Store::read`], off the async workers.
    /// Like [`Store::read`], its result is given once every commit it may have seen is
    /// durable.
    pub async fn lookup<T, E, F>(&self, f: F) -> Result<T, E>
    where
        F: FnOnce(&mut dyn Conn) -> Result<T, E> + Send + 'static,
        T: Send + 'static,
        E: From<DbError> + Send + 'static,
    {
        match &self.inline {
            Some(inline) => {
                let result = inline.run(f).map_err(E::from)?;
                let horizon = Self::read_horizon(self.wal_sync.as_deref());
                self.durable(horizon).await.map_err(E::from)?;
                result
            }
            None => self.read(f).await,
        }
    }

    /// A [`Store::lookup`] that does not wait for the durability of what it read: on
    /// SQLite it may see a commit whose fsync has not returned yet. Only for a read that
    /// decides what the request writes next and is never shown as it is, such as the
    /// account behind an API key: the write's answer waits for a sync made after its own
    /// commit, which covers every commit the read could have seen. Authentication, on every
    /// request, would otherwise wait for other requests' syncs.
    pub async fn peek<T, E, F>(&self, f: F) -> Result<T, E>
    where
        F: FnOnce(&mut dyn Conn) -> Result<T, E> + Send + 'static,
        T: Send + 'static,
        E: From<DbError> + Send + 'static,
    {
        match &self.inline {
            Some(inline) => inline.run(f).map_err(E::from)?,
            None => self.read(f).await,
        }
    }

    /// True when the database answers a trivial query.
    pub async fn is_ready(&self) -> bool {
        self.read(|c| c.query_one("SELECT 1", params![]).map(|_| ()))
            .await
            .is_ok()
    }
}

/// Runs a write; in a keyed request (see [`idempotency::scope`]) a kept write also marks the
/// key as committed, in the same transaction.
fn within_keyed_request<T, E, F>(
    conn: &mut dyn Conn,
    keyed: Option<&(i64, String)>,
    f: F,
) -> Result<T, E>
where
    F: FnOnce(&mut dyn Conn) -> Result<T, E>,
    E: From<DbError>,
{
    let value = f(conn)?;
    if let Some((account_id, key)) = keyed {
        idempotency::mark_committed(conn, *account_id, key)?;
    }
    Ok(value)
}
