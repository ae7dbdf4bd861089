//! A store whose WAL sync fails (a faulty disk) on SQLite: every write then and after gets
//! the error at once, none waits for writes that may never come.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::sql::{Conn, DbError};
use crate::wal_sync::SyncFn;
use crate::{DatabaseUrl, Store, StoreOptions, params};

/// A sync that fails once `broken` is set, as a disk whose writeback failed.
fn breakable(broken: &Arc<AtomicBool>) -> SyncFn {
    let broken = broken.clone();
    Box::new(move || {
        if broken.load(Ordering::SeqCst) {
            Err(std::io::Error::other("EIO"))
        } else {
            Ok(())
        }
    })
}

fn insert(c: &mut dyn Conn, k: &str) -> Result<(), DbError> {
    c.execute("INSERT INTO t (k) VALUES ($1)", params![k])
        .map(|_| ())
}

/// Far longer than any answer takes; reached only by a write left hanging.
const HUNG: Duration = Duration::from_secs(10);

#[tokio::test]
async fn after_a_failed_sync_each_write_fails_at_once_and_alone() {
    let dir = tempfile::tempdir().expect("dir");
    let url = DatabaseUrl::Sqlite(dir.path().join("t.db"));
    let broken = Arc::new(AtomicBool::new(false));
    let store =
        Store::open_with(&url, &StoreOptions::default(), Some(breakable(&broken))).expect("open");
    store
        .write(|c: &mut dyn Conn| c.batch("CREATE TABLE t (k TEXT PRIMARY KEY)"))
        .await
        .expect("table");
    store
        .write(|c: &mut dyn Conn| insert(c, "before"))
        .await
        .expect("kept while the disk works");

    broken.store(true, Ordering::SeqCst);
    // One write at a time: each must be answered without another write behind it.
    for k in ["first", "second", "third"] {
        let answer = tokio::time::timeout(HUNG, store.write(move |c: &mut dyn Conn| insert(c, k)))
            .await
            .unwrap_or_else(|_| panic!("the write {k:?} hung after a failed sync"));
        let err = answer.expect_err("not durable, so not a success");
        assert!(err.to_string().contains("EIO"), "{k}: {err}");
    }
    let read = tokio::time::timeout(
        HUNG,
        store.read(|c: &mut dyn Conn| c.query("SELECT k FROM t", params![])),
    )
    .await
    .expect("the read hung after a failed sync");
    assert!(read.is_err(), "a read after a failed sync was answered");
    assert!(!store.is_ready().await, "ready after a failed sync");
    drop(store);

    // Nothing refused after the failure was committed: only the write whose own sync
    // failed may have reached the file (its outcome is unknown, as with any failed sync).
    let db = rusqlite::Connection::open(dir.path().join("t.db")).expect("reopen");
    let mut keys: Vec<String> = db
        .prepare("SELECT k FROM t ORDER BY k")
        .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect())
        .expect("keys");
    keys.retain(|k| k != "first");
    assert_eq!(keys, ["before"]);
}
