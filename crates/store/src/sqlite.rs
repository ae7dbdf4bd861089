//! SQLite backend: one writer thread doing group commit, a checkpointer thread, a few reader
//! threads, WAL mode.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::thread;

use crossbeam_channel::{Receiver, Sender, select};
use rusqlite::types::{ToSqlOutput, ValueRef};
use rusqlite::{Connection, OpenFlags, ToSql};

use crate::open_batch::OpenBatch;
use crate::pool::{MAX_BATCH, ReadJob, WriteJob, batch, run_write_batch};
use crate::sql::{Conn, DbError, Dialect, Row, Value};
use crate::wal_checkpoints::{CheckpointCounts, Checkpoints};
use crate::wal_sync::WalSync;

/// How much SQLite waits for the disk at each commit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Synchronous {
    /// Every write is answered after an fsync of the WAL that covers its commit: survives
    /// power loss. The fsync runs beside the writer (see the `wal_sync` module).
    Full,
    /// fsync at checkpoints only: survives a process crash, not a power loss.
    Normal,
}

/// A rusqlite connection seen through [`Conn`].
pub(crate) struct SqliteConn<'a>(pub(crate) &'a Connection);

/// The SQL text SQLite is given for `$N` placeholders (this runs for every statement,
/// before the statement cache lookup). SQLite reads `$1` as a parameter *named* `$1`, whose
/// index is its rank among the distinct names in order of first appearance: when `$1`, `$2`,
/// ... first appear in that order (nearly every statement), the index is N and the text is
/// used as written; otherwise `$N` become `?N` (the same length, a byte copy).
fn placeholders(sql: &str) -> std::borrow::Cow<'_, str> {
    if in_order_seen(sql) {
        sql.into()
    } else {
        numbered(sql)
    }
}

/// Statement texts this thread has run, with whether their placeholders are in order. Most
/// statements are the same texts run again and again, and scanning one for its `$N` at each
/// execution was 3.9% of the writer thread's samples under an SMS load, 2.6% in the scan's
/// own code (docs/benchmarks.md); a text seen before costs a lookup by its address and a
/// comparison with the copy kept (a text freed and another written at its address is not
/// taken for it). The copies kept hold at most [`SEEN_BYTES`] a thread (multi-row
/// statements have a text for each number of rows); past that the memory starts over.
fn in_order_seen(sql: &str) -> bool {
    SEEN.with(|seen| {
        let key = (sql.as_ptr() as usize, sql.len());
        let mut seen = seen.borrow_mut();
        if let Some((text, in_order)) = seen.texts.get(&key)
            && **text == *sql
        {
            return *in_order;
        }
        let in_order = in_order(sql);
        if sql.len() <= SEEN_BYTES {
            if seen.bytes + sql.len() > SEEN_BYTES {
                seen.texts.clear();
                seen.bytes = 0;
            }
            seen.bytes += sql.len();
            if let Some((old, _)) = seen.texts.insert(key, (sql.into(), in_order)) {
                seen.bytes -= old.len();
            }
        }
        in_order
    })
}

/// Most bytes of statement text [`in_order_seen`] keeps a thread.
const SEEN_BYTES: usize = 1 << 20;

/// What [`in_order_seen`] keeps: by the text's address and length, a copy of it and the
/// verdict; and the bytes of the copies.
#[derive(Default)]
struct Seen {
    texts: std::collections::HashMap<(usize, usize), (Box<str>, bool)>,
    bytes: usize,
}

thread_local! {
    static SEEN: std::cell::RefCell<Seen> = std::cell::RefCell::default();
}

/// Whether `$1`, `$2`, ... first appear in `sql` in that order (see [`placeholders`]).
fn in_order(sql: &str) -> bool {
    let bytes = sql.as_bytes();
    let mut next = 1u32;
    let mut i = 0;
    while let Some(at) = sql[i..].find('$') {
        let start = i + at + 1;
        let digits = bytes[start..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count();
        i = start + digits;
        let n = (digits > 0)
            .then(|| {
                bytes[start..i].iter().try_fold(0u32, |n, &d| {
                    n.checked_mul(10)?.checked_add(u32::from(d - b'0'))
                })
            })
            .flatten();
        match n {
            Some(n) if n == next => next += 1,
            Some(n) if n < next => {}
            Some(_) => return false,
            None => {}
        }
    }
    true
}

/// `sql` with every `$N` written `?N`: SQLite then binds each by its number.
fn numbered(sql: &str) -> std::borrow::Cow<'_, str> {
    let mut out = sql.as_bytes().to_vec();
    for i in 0..out.len().saturating_sub(1) {
        if out[i] == b'$' && out[i + 1].is_ascii_digit() {
            out[i] = b'?';
        }
    }
    // Only ASCII '$' became ASCII '?', so the bytes are still UTF-8.
    String::from_utf8(out).map_or_else(|_| sql.into(), Into::into)
}

impl ToSql for Value {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(match self {
            Value::Null => ToSqlOutput::Borrowed(ValueRef::Null),
            Value::Int(v) => ToSqlOutput::Borrowed(ValueRef::Integer(*v)),
            Value::Bool(b) => ToSqlOutput::Borrowed(ValueRef::Integer(i64::from(*b))),
            Value::Text(t) => ToSqlOutput::Borrowed(ValueRef::Text(t.as_bytes())),
            Value::Blob(b) => ToSqlOutput::Borrowed(ValueRef::Blob(b)),
            Value::Array(_) => {
                return Err(rusqlite::Error::ToSqlConversionFailure(
                    "arrays are bound on PostgreSQL only".into(),
                ));
            }
        })
    }
}

fn map_err(e: rusqlite::Error) -> DbError {
    if let rusqlite::Error::SqliteFailure(code, msg) = &e
        && code.code == rusqlite::ErrorCode::ConstraintViolation
        && (code.extended_code == rusqlite::ffi::SQLITE_CONSTRAINT_UNIQUE
            || code.extended_code == rusqlite::ffi::SQLITE_CONSTRAINT_PRIMARYKEY)
    {
        return DbError::UniqueViolation(msg.clone().unwrap_or_default());
    }
    DbError::Other(e.to_string())
}

fn decode(v: ValueRef<'_>) -> Value {
    match v {
        ValueRef::Null => Value::Null,
        ValueRef::Integer(i) => Value::Int(i),
        // Money and time are integers; a REAL only comes from an aggregate such as AVG.
        ValueRef::Real(f) => Value::Int(f as i64),
        ValueRef::Text(t) => Value::Text(String::from_utf8_lossy(t).into_owned()),
        ValueRef::Blob(b) => Value::Blob(b.to_vec()),
    }
}

impl Conn for SqliteConn<'_> {
    fn dialect(&self) -> Dialect {
        Dialect::Sqlite
    }

    fn execute(&mut self, sql: &str, params: &[Value]) -> Result<u64, DbError> {
        let mut stmt = self.0.prepare_cached(&placeholders(sql)).map_err(map_err)?;
        let n = stmt
            .execute(rusqlite::params_from_iter(params.iter()))
            .map_err(map_err)?;
        Ok(n as u64)
    }

    fn query(&mut self, sql: &str, params: &[Value]) -> Result<Vec<Row>, DbError> {
        let mut stmt = self.0.prepare_cached(&placeholders(sql)).map_err(map_err)?;
        let width = stmt.column_count();
        let mut rows = stmt
            .query(rusqlite::params_from_iter(params.iter()))
            .map_err(map_err)?;
        let mut out = Vec::new();
        while let Some(row) = rows.next().map_err(map_err)? {
            let mut values = Vec::with_capacity(width);
            for i in 0..width {
                values.push(decode(row.get_ref(i).map_err(map_err)?));
            }
            out.push(Row::new(values));
        }
        Ok(out)
    }

    fn batch(&mut self, sql: &str) -> Result<(), DbError> {
        self.0.execute_batch(sql).map_err(map_err)
    }

    fn insert_id(&mut self, sql: &str, params: &[Value]) -> Result<Option<i64>, DbError> {
        let changed = self.execute(sql, params)?;
        Ok((changed > 0).then(|| self.0.last_insert_rowid()))
    }
}

fn open(path: &Path, read_only: bool, sync: Synchronous) -> Result<Connection, DbError> {
    let flags = if read_only {
        OpenFlags::SQLITE_OPEN_READ_ONLY
            | OpenFlags::SQLITE_OPEN_NO_MUTEX
            | OpenFlags::SQLITE_OPEN_URI
    } else {
        OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX
            | OpenFlags::SQLITE_OPEN_URI
    };
    // The WAL frames of a commit written to the file in one call (`wal_writes`).
    crate::wal_writes::register()
        .map_err(|rc| DbError::Other(format!("could not register the WAL's VFS: error {rc}")))?;
    let conn = Connection::open_with_flags_and_vfs(path, flags, crate::wal_writes::NAME)
        .map_err(map_err)?;
    conn.busy_timeout(std::time::Duration::from_secs(10))
        .map_err(map_err)?;
    // `Full` is SQLite's `NORMAL` plus the `wal_sync` thread: the commit writes the WAL
    // frames and a thread beside the writer syncs them before anyone is answered.
    let sync = match sync {
        Synchronous::Full | Synchronous::Normal => "NORMAL",
    };
    if !read_only {
        conn.execute_batch("PRAGMA journal_mode = WAL;")
            .map_err(map_err)?;
    }
    // The page cache stays at SQLite's default (2 MB). A reader's cache is emptied whenever
    // the database changed since its last read, which under writes is every read, and the
    // writer's is trimmed at every commit; both walk the cache's hash table, whose size
    // follows the cache's. Measured on the SMS benchmark: 32 MB caches cost the writer more
    // in those walks (7% of its time) than they saved in reads.
    conn.execute_batch(&format!(
        "PRAGMA synchronous = {sync}; PRAGMA foreign_keys = ON;"
    ))
    .map_err(map_err)?;
    conn.set_prepared_statement_cache_capacity(256);
    Ok(conn)
}

/// Read-only connections lent to the calling thread for point reads (an indexed row or
/// two, microseconds of work): the query runs where the request already is, instead of
/// waking a reader thread and being woken again by its answer, two thread switches that
/// cost more than the query (measured: authentication on reader threads was a quarter of
/// the server's CPU per request).
pub(crate) struct InlineReaders {
    path: PathBuf,
    sync: Synchronous,
    idle: Mutex<Vec<Connection>>,
}

impl InlineReaders {
    pub(crate) fn new(path: &Path, sync: Synchronous) -> Self {
        Self {
            path: path.to_owned(),
            sync,
            idle: Mutex::new(Vec::new()),
        }
    }

    /// Runs `f` on an idle connection (opened on first need; there are never more than
    /// threads reading at once) and puts the connection back.
    pub(crate) fn run<T>(&self, f: impl FnOnce(&mut dyn Conn) -> T) -> Result<T, DbError> {
        let taken = self.idle.lock().map_err(|_| DbError::Closed)?.pop();
        let conn = match taken {
            Some(conn) => conn,
            None => open(&self.path, true, self.sync)?,
        };
        let out = f(&mut SqliteConn(&conn));
        self.idle.lock().map_err(|_| DbError::Closed)?.push(conn);
        Ok(out)
    }
}

/// The SQLite backend's threads, as the store holds them.
pub(crate) struct Started {
    pub(crate) writes: Sender<WriteJob>,
    pub(crate) reads: Sender<ReadJob>,
    /// With [`Synchronous::Full`]: what callers wait on before taking a commit as durable.
    pub(crate) wal_sync: Option<Arc<WalSync>>,
}

/// Opens the database file, then starts the writer, its WAL syncer (with
/// [`Synchronous::Full`]), its checkpointer (counting its checkpoints in `counts`) and
/// `readers` reader threads. `wal_file_sync` makes the WAL durable ([`WalSync::wal_file`]; tests hold it back to see
/// what waits for it).
pub(crate) fn start(
    path: &Path,
    readers: usize,
    sync: Synchronous,
    counts: Arc<CheckpointCounts>,
    wal_file_sync: crate::wal_sync::SyncFn,
) -> Result<Started, DbError> {
    if let Some(dir) = path.parent()
        && !dir.as_os_str().is_empty()
    {
        std::fs::create_dir_all(dir)
            .map_err(|e| DbError::Other(format!("{}: {e}", dir.display())))?;
    }
    let writer = open(path, false, sync)?;
    let checkpointer = open(path, false, sync)?;
    let checkpoints = Checkpoints::start(&writer, checkpointer, counts)
        .map_err(|e| DbError::Other(e.to_string()))?;
    let wal_sync = match sync {
        Synchronous::Full => Some(WalSync::start(wal_file_sync)?),
        Synchronous::Normal => None,
    };
    let (write_tx, write_rx) = crossbeam_channel::unbounded::<WriteJob>();
    let writer_sync = wal_sync.clone();
    thread::Builder::new()
        .name("sqlite-writer".into())
        .spawn(move || match writer_sync {
            Some(wal_sync) => synced_writer_loop(writer, checkpoints, &wal_sync, write_rx),
            None => writer_loop(writer, checkpoints, write_rx),
        })
        .map_err(|e| DbError::Other(e.to_string()))?;

    let (read_tx, read_rx) = crossbeam_channel::unbounded::<ReadJob>();
    for i in 0..readers.max(1) {
        let conn = open(path, true, sync)?;
        let rx = read_rx.clone();
        thread::Builder::new()
            .name(format!("sqlite-reader-{i}"))
            .spawn(move || reader_loop(conn, rx))
            .map_err(|e| DbError::Other(e.to_string()))?;
    }
    Ok(Started {
        writes: write_tx,
        reads: read_tx,
        wal_sync,
    })
}

/// The writer with SQLite's own sync (`Synchronous::Normal`: nothing to wait for): takes
/// every write waiting and commits them together.
fn writer_loop(conn: Connection, mut checkpoints: Checkpoints, rx: Receiver<WriteJob>) {
    while let Ok(first) = rx.recv() {
        run_write_batch(&mut SqliteConn(&conn), "BEGIN IMMEDIATE", batch(&rx, first));
        checkpoints.after_commit(&conn);
    }
}

/// The writer with the WAL synced beside it (`Synchronous::Full`): runs each write as it
/// arrives in an open transaction, and commits once no sync is running (or the batch is
/// full); the syncer answers the batch (see the `open_batch` and `wal_sync` modules).
fn synced_writer_loop(
    conn: Connection,
    mut checkpoints: Checkpoints,
    wal_sync: &WalSync,
    rx: Receiver<WriteJob>,
) {
    while let Ok(first) = rx.recv() {
        let c = &mut SqliteConn(&conn);
        let mut open = match OpenBatch::begin(c, "BEGIN IMMEDIATE") {
            Ok(open) => open,
            Err(e) => {
                tracing::error!(error = %e, "could not begin a write transaction");
                first.finish(Err(e));
                continue;
            }
        };
        let mut next = Some(first);
        let mut broken = false;
        while let Some(job) = next.take() {
            if let Err((e, jobs)) = open.push(c, job) {
                tracing::error!(error = %e, "could not restart a write transaction");
                for job in jobs {
                    job.finish(Err(e.clone()));
                }
                broken = true;
                break;
            }
            if open.len() >= MAX_BATCH {
                break;
            }
            next = rx.try_recv().ok();
            // A sync runs: take the writes that arrive until it returns. A ring left from
            // a sync the writer did not wait for only costs another look at `idle`.
            while next.is_none() && !wal_sync.idle() {
                select! {
                    recv(rx) -> job => match job {
                        Ok(job) => next = Some(job),
                        // The store is closing: commit what the batch holds.
                        Err(_) => break,
                    },
                    recv(wal_sync.done()) -> _ => {}
                }
            }
        }
        if broken {
            let _ = c.batch("ROLLBACK");
            continue;
        }
        let mut seq = 0;
        let ended = open.end(c, |c| {
            // Once a sync failed nothing more is committed: the batch is rolled back and
            // each write answered with the failure (see the `wal_sync` module).
            if let Some(failed) = wal_sync.failure() {
                return Err(failed);
            }
            seq = wal_sync.begin_commit();
            c.batch("COMMIT")
        });
        if let Some((jobs, outcome)) = ended {
            // Background work that asked for it is answered now, while the sync runs: its
            // next batch then runs during this sync instead of in front of the requests
            // that arrive after it. The commit is synced all the same.
            let (early, jobs): (Vec<WriteJob>, Vec<WriteJob>) =
                jobs.into_iter().partition(|job| job.before_sync());
            for job in early {
                job.finish(outcome.clone());
            }
            wal_sync.end_commit(seq, jobs, outcome);
        }
        checkpoints.after_commit(&conn);
    }
}

fn reader_loop(conn: Connection, rx: Receiver<ReadJob>) {
    while let Ok(job) = rx.recv() {
        job(&mut SqliteConn(&conn));
    }
}

#[cfg(test)]
mod tests {
    use super::placeholders;
    use crate::sql::{Conn, Value};

    #[test]
    fn numbered_placeholders_out_of_order_are_rewritten() {
        assert_eq!(placeholders("a = $2 AND b = $1"), "a = ?2 AND b = ?1");
        assert_eq!(placeholders("a = $1 AND b = $12"), "a = ?1 AND b = ?12");
        assert_eq!(placeholders("x = '$' AND y = $3"), "x = '$' AND y = ?3");
        assert_eq!(placeholders("é = $2 AND ü = $1$"), "é = ?2 AND ü = ?1$");
    }

    #[test]
    fn a_text_at_the_address_of_another_is_scanned_again() {
        let mut text = String::from("a = $1 AND b = $2");
        assert!(matches!(placeholders(&text), std::borrow::Cow::Borrowed(_)));
        // The same buffer, the same length, other placeholders.
        text.replace_range(.., "a = $2 AND b = $1");
        assert_eq!(placeholders(&text), "a = ?2 AND b = ?1");
        text.replace_range(.., "a = $1 AND b = $2");
        assert!(matches!(placeholders(&text), std::borrow::Cow::Borrowed(_)));
    }

    #[test]
    fn the_texts_kept_stay_under_their_bound() {
        let texts: Vec<String> = (0..300)
            .map(|n| format!("SELECT {n} WHERE a = $1 AND b = $2 {}", " ".repeat(5_000)))
            .collect();
        for text in &texts {
            assert!(matches!(placeholders(text), std::borrow::Cow::Borrowed(_)));
            let (kept, bytes) = super::SEEN.with(|seen| {
                let seen = seen.borrow();
                (
                    seen.texts.values().map(|(t, _)| t.len()).sum::<usize>(),
                    seen.bytes,
                )
            });
            assert_eq!(kept, bytes);
            assert!(bytes <= super::SEEN_BYTES, "{bytes} bytes kept");
        }
    }

    #[test]
    fn numbers_too_large_or_missing_do_not_count() {
        let sql = "a = $1 AND b = '$' AND c = $99999999999 AND d = $2";
        assert!(matches!(placeholders(sql), std::borrow::Cow::Borrowed(_)));
        assert_eq!(
            placeholders("a = $99999999999 AND b = $2"),
            "a = ?99999999999 AND b = ?2"
        );
    }

    #[test]
    fn placeholders_in_order_are_kept() {
        let sql = "VALUES ($1, $2, $2, $3) WHERE x = $1 AND y = '$'";
        assert!(matches!(placeholders(sql), std::borrow::Cow::Borrowed(_)));
    }

    #[test]
    fn kept_placeholders_bind_by_their_number() {
        let conn = rusqlite::Connection::open_in_memory().expect("open");
        let mut c = super::SqliteConn(&conn);
        let params = [Value::Int(1), Value::Int(2), Value::Int(3)];
        for sql in ["SELECT $1, $2, $2, $3, $1", "SELECT $2, $1, $3, $2, $1"] {
            let row = c.query(sql, &params).expect("query").remove(0);
            let got: Vec<i64> = (0..5).map(|i| row.int(i).expect("int")).collect();
            let want: Vec<i64> = sql
                .split(['$', ','])
                .filter_map(|w| w.trim().parse().ok())
                .collect();
            assert_eq!(got, want, "{sql}");
        }
    }
}
