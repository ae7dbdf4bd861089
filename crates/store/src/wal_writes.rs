//! The WAL frames of a commit written to the file in one call: a VFS over SQLite's default
//! (unix) one, whose WAL files gather the frames a transaction appends and write them
//! together when its commit frame is complete.
//!
//! Why: SQLite writes each WAL frame with two calls, its 24-byte header and then its page.
//! Under an SMS load on SQLite the writer made about 36 `pwrite` calls a commit, 17% of its
//! time with no status moves and 12% with them (docs/benchmarks.md), on the one thread every
//! request's write waits for. Gathered, a commit is one call; the kernel's work per page
//! stays, its work per call does not.
//!
//! Why this keeps every guarantee: the file receives the same bytes at the same offsets,
//! only in fewer calls, and nothing SQLite could observe differs.
//! - A commit's frames are all written before SQLite goes on to publish them (the WAL
//!   index header that readers and the checkpointer follow): the commit frame is the last
//!   frame a commit appends (the one whose header carries the database's size), and the
//!   write of its page ends the gathering with a write to the file, whose error is the
//!   page write's error, so SQLite rolls the transaction back as it would have.
//! - What SQLite writes after a commit frame and before publishing it (the headers it
//!   rewrites when the transaction overwrote one of its own frames,
//!   `walRewriteChecksums`) goes to the file at once: after a commit, writes are gathered
//!   again only from the next append at the end of the commit or a restart of the WAL at
//!   its start.
//! - Before any other use of the file that could see its contents or size (a read, a sync,
//!   a size, a truncate, a file control, a close, a write anywhere but at the end of what
//!   is gathered) the gathered bytes are written first. Frames of a transaction that spills
//!   pages before it commits are gathered like any others, and reach the file before its
//!   commit frame does.
//! - Durability is the `wal_sync` module's: it syncs the WAL file after `COMMIT` returned,
//!   by which time the commit's bytes were written.
//!
//! Only the files SQLite opens as WALs are wrapped; every other file (the database, its
//! shared memory, temporary files) is the default VFS's own object.

use std::ffi::{CStr, c_char, c_int, c_void};
use std::sync::OnceLock;

use rusqlite::ffi;

/// The name connections open the database with (see [`register`]).
pub(crate) const NAME: &CStr = c"dialtone-wal";

/// Most bytes gathered before they are written anyway (a large transaction's spill).
const GATHER_MAX: usize = 1 << 20;

/// The size of a WAL frame's header: a write of this size is one.
const FRAME_HEADER: usize = 24;

/// A WAL file: SQLite's own file object (`real`, in the same allocation, after this) and
/// the bytes gathered for it.
#[repr(C)]
struct WalFile {
    /// What SQLite sees of any file: first, so the object's address is this struct's.
    base: ffi::sqlite3_file,
    real: *mut ffi::sqlite3_file,
    gathered: Vec<u8>,
    /// The file offset of `gathered[0]`.
    start: i64,
    /// The last frame header gathered is a commit frame's: the next write (its page) ends
    /// the commit.
    commit_header: bool,
    /// Set when a commit's frames were written: where they ended. Writes go to the file at
    /// once until one appends there or restarts the WAL at offset 0.
    after_commit: Option<i64>,
}

impl WalFile {
    /// The file offset just past what is gathered.
    fn end(&self) -> i64 {
        self.start + self.gathered.len() as i64
    }
}

/// The size of [`WalFile`] rounded up to SQLite's alignment of file objects.
const WAL_FILE_SIZE: usize = std::mem::size_of::<WalFile>().next_multiple_of(8);

static REGISTERED: OnceLock<Result<(), c_int>> = OnceLock::new();

/// Registers the VFS named [`NAME`] (once per process; later calls return the first
/// result). Connections opened with it behave as the default VFS's, with WAL writes
/// gathered.
pub(crate) fn register() -> Result<(), c_int> {
    *REGISTERED.get_or_init(|| {
        // SAFETY: `sqlite3_vfs_find` initializes SQLite if needed and returns the default
        // VFS, which lives as long as the process. The new VFS is leaked for the same
        // lifetime, as `sqlite3_vfs_register` requires.
        unsafe {
            let inner = ffi::sqlite3_vfs_find(std::ptr::null());
            if inner.is_null() {
                return Err(ffi::SQLITE_ERROR);
            }
            let mut vfs: ffi::sqlite3_vfs = std::ptr::read(inner);
            vfs.szOsFile = c_int::try_from(WAL_FILE_SIZE)
                .map_err(|_| ffi::SQLITE_ERROR)?
                .saturating_add((*inner).szOsFile);
            vfs.pNext = std::ptr::null_mut();
            vfs.zName = NAME.as_ptr();
            vfs.pAppData = inner.cast::<c_void>();
            vfs.xOpen = Some(open);
            let rc = ffi::sqlite3_vfs_register(Box::into_raw(Box::new(vfs)), 0);
            if rc == ffi::SQLITE_OK {
                Ok(())
            } else {
                Err(rc)
            }
        }
    })
}

/// `xOpen`: a WAL is opened by the default VFS after a [`WalFile`] in the space SQLite
/// gives; any other file is the default VFS's object at the start of that space.
unsafe extern "C" fn open(
    vfs: *mut ffi::sqlite3_vfs,
    name: *const c_char,
    file: *mut ffi::sqlite3_file,
    flags: c_int,
    out_flags: *mut c_int,
) -> c_int {
    // SAFETY: `pAppData` is the default VFS (set by `register`); `file` has `szOsFile` bytes,
    // room for a `WalFile` followed by the default VFS's file object.
    unsafe {
        let inner = (*vfs).pAppData.cast::<ffi::sqlite3_vfs>();
        let Some(inner_open) = (*inner).xOpen else {
            return ffi::SQLITE_ERROR;
        };
        if flags & ffi::SQLITE_OPEN_WAL == 0 {
            return inner_open(inner, name, file, flags, out_flags);
        }
        let real = file
            .cast::<u8>()
            .add(WAL_FILE_SIZE)
            .cast::<ffi::sqlite3_file>();
        let rc = inner_open(inner, name, real, flags, out_flags);
        if rc != ffi::SQLITE_OK {
            // SQLite calls no method of a file whose `pMethods` is null.
            (*file).pMethods = std::ptr::null();
            if !(*real).pMethods.is_null()
                && let Some(close) = (*(*real).pMethods).xClose
            {
                close(real);
            }
            return rc;
        }
        file.cast::<WalFile>().write(WalFile {
            base: ffi::sqlite3_file {
                pMethods: &WAL_METHODS,
            },
            real,
            gathered: Vec::new(),
            start: 0,
            commit_header: false,
            after_commit: None,
        });
        ffi::SQLITE_OK
    }
}

static WAL_METHODS: ffi::sqlite3_io_methods = ffi::sqlite3_io_methods {
    iVersion: 1,
    xClose: Some(close),
    xRead: Some(read),
    xWrite: Some(write),
    xTruncate: Some(truncate),
    xSync: Some(sync),
    xFileSize: Some(file_size),
    xLock: Some(lock),
    xUnlock: Some(unlock),
    xCheckReservedLock: Some(check_reserved_lock),
    xFileControl: Some(file_control),
    xSectorSize: Some(sector_size),
    xDeviceCharacteristics: Some(device_characteristics),
    xShmMap: None,
    xShmLock: None,
    xShmBarrier: None,
    xShmUnmap: None,
    xFetch: None,
    xUnfetch: None,
};

/// The [`WalFile`] behind a file SQLite hands to [`WAL_METHODS`].
///
/// # Safety
/// `file` must be a WAL opened by [`open`], used by one thread at a time (SQLite's
/// connections here are opened without mutexes and used by one thread at a time).
unsafe fn wal<'a>(file: *mut ffi::sqlite3_file) -> &'a mut WalFile {
    // SAFETY: see the function's contract.
    unsafe { &mut *file.cast::<WalFile>() }
}

/// Calls the default VFS's method `$m` on the real file.
macro_rules! real {
    ($w:expr, $m:ident $(, $arg:expr)*) => {{
        let real = $w.real;
        // SAFETY: `real` was opened by the default VFS and is open until `close`.
        match unsafe { (*(*real).pMethods).$m } {
            Some(f) => unsafe { f(real $(, $arg)*) },
            None => ffi::SQLITE_IOERR,
        }
    }};
}

/// The most bytes handed to the default VFS in one write: its unix write keeps only the low
/// 17 bits of a length (`seekAndWrite`), so larger writes go in pieces of this size.
const WRITE_MAX: usize = 0x1_f000;

/// Writes what is gathered to the file (nothing to do when nothing is).
fn flush(w: &mut WalFile) -> c_int {
    let mut rc = ffi::SQLITE_OK;
    let mut at = w.start;
    for piece in w.gathered.chunks(WRITE_MAX) {
        // A piece is at most `WRITE_MAX` bytes: it fits an int.
        let len = piece.len() as c_int;
        rc = real!(w, xWrite, piece.as_ptr().cast::<c_void>(), len, at);
        if rc != ffi::SQLITE_OK {
            break;
        }
        at += piece.len() as i64;
    }
    w.gathered.clear();
    w.commit_header = false;
    rc
}

unsafe extern "C" fn write(
    file: *mut ffi::sqlite3_file,
    data: *const c_void,
    amount: c_int,
    offset: ffi::sqlite3_int64,
) -> c_int {
    // SAFETY: SQLite passes its WAL file and `amount` readable bytes at `data`.
    let (w, bytes) = unsafe {
        (
            wal(file),
            std::slice::from_raw_parts(data.cast::<u8>(), usize::try_from(amount).unwrap_or(0)),
        )
    };
    if let Some(end) = w.after_commit {
        if offset != end && offset != 0 {
            // A header of the commit just written, rewritten before it is published. Nothing
            // is gathered here: `after_commit` is set only by a flush, and gathering unsets it.
            return real!(w, xWrite, data, amount, offset);
        }
        w.after_commit = None;
    }
    if !w.gathered.is_empty() && offset != w.end() {
        let rc = flush(w);
        if rc != ffi::SQLITE_OK {
            return rc;
        }
    }
    if w.gathered.is_empty() {
        w.start = offset;
    }
    w.gathered.extend_from_slice(bytes);
    let commit_page = w.commit_header && bytes.len() != FRAME_HEADER;
    w.commit_header = bytes.len() == FRAME_HEADER && bytes[4..8] != [0, 0, 0, 0];
    if commit_page {
        let end = w.end();
        let rc = flush(w);
        if rc == ffi::SQLITE_OK {
            w.after_commit = Some(end);
        }
        return rc;
    }
    if w.gathered.len() >= GATHER_MAX {
        return flush(w);
    }
    ffi::SQLITE_OK
}

unsafe extern "C" fn close(file: *mut ffi::sqlite3_file) -> c_int {
    // SAFETY: SQLite closes a file once, after which it uses it no more.
    let w = unsafe { wal(file) };
    let flushed = flush(w);
    let closed = real!(w, xClose);
    // SAFETY: the `WalFile` was written by `open` and is dropped once, here.
    unsafe { std::ptr::drop_in_place(file.cast::<WalFile>()) };
    if flushed != ffi::SQLITE_OK {
        flushed
    } else {
        closed
    }
}

/// Writes what is gathered, then calls `$m` on the real file.
macro_rules! flushed {
    ($file:expr, $m:ident $(, $arg:expr)*) => {{
        // SAFETY: SQLite passes its WAL file.
        let w = unsafe { wal($file) };
        match flush(w) {
            ffi::SQLITE_OK => real!(w, $m $(, $arg)*),
            rc => rc,
        }
    }};
}

unsafe extern "C" fn read(
    file: *mut ffi::sqlite3_file,
    data: *mut c_void,
    amount: c_int,
    offset: ffi::sqlite3_int64,
) -> c_int {
    flushed!(file, xRead, data, amount, offset)
}

unsafe extern "C" fn truncate(file: *mut ffi::sqlite3_file, size: ffi::sqlite3_int64) -> c_int {
    flushed!(file, xTruncate, size)
}

unsafe extern "C" fn sync(file: *mut ffi::sqlite3_file, flags: c_int) -> c_int {
    flushed!(file, xSync, flags)
}

unsafe extern "C" fn file_size(
    file: *mut ffi::sqlite3_file,
    size: *mut ffi::sqlite3_int64,
) -> c_int {
    flushed!(file, xFileSize, size)
}

unsafe extern "C" fn file_control(
    file: *mut ffi::sqlite3_file,
    op: c_int,
    arg: *mut c_void,
) -> c_int {
    flushed!(file, xFileControl, op, arg)
}

unsafe extern "C" fn lock(file: *mut ffi::sqlite3_file, level: c_int) -> c_int {
    // SAFETY: SQLite passes its WAL file.
    real!(unsafe { wal(file) }, xLock, level)
}

unsafe extern "C" fn unlock(file: *mut ffi::sqlite3_file, level: c_int) -> c_int {
    // SAFETY: SQLite passes its WAL file.
    real!(unsafe { wal(file) }, xUnlock, level)
}

unsafe extern "C" fn check_reserved_lock(file: *mut ffi::sqlite3_file, out: *mut c_int) -> c_int {
    // SAFETY: SQLite passes its WAL file.
    real!(unsafe { wal(file) }, xCheckReservedLock, out)
}

unsafe extern "C" fn sector_size(file: *mut ffi::sqlite3_file) -> c_int {
    // SAFETY: SQLite passes its WAL file.
    real!(unsafe { wal(file) }, xSectorSize)
}

unsafe extern "C" fn device_characteristics(file: *mut ffi::sqlite3_file) -> c_int {
    // SAFETY: SQLite passes its WAL file.
    real!(unsafe { wal(file) }, xDeviceCharacteristics)
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use rusqlite::{Connection, OpenFlags};

    fn open(path: &Path) -> Connection {
        super::register().expect("register");
        let conn = Connection::open_with_flags_and_vfs(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE
                | OpenFlags::SQLITE_OPEN_CREATE
                | OpenFlags::SQLITE_OPEN_NO_MUTEX,
            super::NAME,
        )
        .expect("open");
        conn.execute_batch(
            "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; \
             PRAGMA wal_autocheckpoint = 0;",
        )
        .expect("pragmas");
        conn
    }

    /// What a power cut right after the last commit (and its sync) leaves: the database
    /// and its WAL as the file system has them, opened by the default VFS, which recovers
    /// the WAL from its frames and their checksums.
    fn crash_image(dir: &Path, into: &Path) -> Connection {
        std::fs::create_dir_all(into).expect("dir");
        for name in ["d.db", "d.db-wal"] {
            std::fs::copy(dir.join(name), into.join(name)).expect("copy");
        }
        let conn = Connection::open(into.join("d.db")).expect("open the image");
        let check: String = conn
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .expect("integrity_check");
        assert_eq!(check, "ok");
        conn
    }

    fn rows(conn: &Connection) -> (i64, i64) {
        conn.query_row("SELECT count(*), coalesce(sum(v), 0) FROM t", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .expect("count")
    }

    #[test]
    fn every_commit_is_whole_in_the_file_and_seen_by_other_connections() {
        let dir = tempfile::tempdir().expect("tempdir");
        let writer = open(&dir.path().join("d.db"));
        let reader = open(&dir.path().join("d.db"));
        writer
            .execute_batch("CREATE TABLE t (id INTEGER PRIMARY KEY, v INTEGER, pad TEXT)")
            .expect("create");
        let mut expected = (0, 0);
        for round in 0..40_i64 {
            // Commits of one frame to a few hundred (over `WRITE_MAX` bytes).
            let n = 1 + round * round / 4;
            let tx = writer.unchecked_transaction().expect("begin");
            for i in 0..n {
                tx.execute(
                    "INSERT INTO t (v, pad) VALUES (?1, ?2)",
                    rusqlite::params![i, "x".repeat(700)],
                )
                .expect("insert");
            }
            tx.commit().expect("commit");
            expected = (expected.0 + n, expected.1 + n * (n - 1) / 2);
            assert_eq!(rows(&reader), expected, "another connection, round {round}");
            if round % 8 == 7 {
                let image = crash_image(dir.path(), &dir.path().join(format!("image{round}")));
                assert_eq!(rows(&image), expected, "after a crash, round {round}");
            }
        }
    }

    #[test]
    fn spilled_rewritten_and_rolled_back_transactions_recover_as_committed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let writer = open(&dir.path().join("d.db"));
        // A cache of a few pages: large transactions spill frames before they commit, and
        // pages dirtied again after their spill are rewritten in place in the WAL (whose
        // checksums SQLite then writes again after the commit frame).
        writer
            .execute_batch(
                "PRAGMA cache_size = 8; \
                 CREATE TABLE t (id INTEGER PRIMARY KEY, v INTEGER, pad TEXT);",
            )
            .expect("setup");
        let fill = |conn: &Connection, n: i64| {
            for i in 0..n {
                conn.execute(
                    "INSERT INTO t (v, pad) VALUES (?1, ?2)",
                    rusqlite::params![i, "y".repeat(900)],
                )
                .expect("insert");
            }
        };
        let tx = writer.unchecked_transaction().expect("begin");
        fill(&tx, 400);
        tx.commit().expect("commit");
        // Spilled, then rolled back: its frames stay in the file past the last commit.
        let tx = writer.unchecked_transaction().expect("begin");
        fill(&tx, 300);
        drop(tx);
        // Spilled, its pages dirtied again after the spill, committed.
        let tx = writer.unchecked_transaction().expect("begin");
        fill(&tx, 200);
        for _ in 0..3 {
            tx.execute("UPDATE t SET v = v + 1", []).expect("update");
        }
        tx.commit().expect("commit");
        let expected = rows(&writer);
        assert_eq!(expected.0, 600);
        assert_eq!(expected.1, 400 * 399 / 2 + 200 * 199 / 2 + 600 * 3);
        let image = crash_image(dir.path(), &dir.path().join("image"));
        assert_eq!(rows(&image), expected);
        // And after a checkpoint and a restart of the WAL from its start.
        writer
            .execute_batch("PRAGMA wal_checkpoint(RESTART);")
            .expect("checkpoint");
        let tx = writer.unchecked_transaction().expect("begin");
        fill(&tx, 50);
        tx.execute("UPDATE t SET v = v + 1", []).expect("update");
        tx.commit().expect("commit");
        let expected = rows(&writer);
        assert_eq!(expected.0, 650);
        let image = crash_image(dir.path(), &dir.path().join("image2"));
        assert_eq!(rows(&image), expected);
    }
}
