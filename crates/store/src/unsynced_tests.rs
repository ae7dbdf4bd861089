//! [`Store::write_unsynced`] on SQLite with the WAL synced beside the writer: answered at
//! its commit, while nothing that leaves the store (a request's answer, a read's result,
//! [`Unsynced::synced`]) runs ahead of the sync.

use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::Duration;

use crate::sql::{Conn, DbError};
use crate::wal_sync::SyncFn;
use crate::{DatabaseUrl, Store, StoreOptions, params};

/// A door in front of the WAL's sync: syncs wait while it is shut.
#[derive(Clone, Default)]
struct Door(Arc<(Mutex<bool>, Condvar)>);

impl Door {
    fn set(&self, open: bool) {
        let (lock, turn) = &*self.0;
        *lock.lock().unwrap_or_else(PoisonError::into_inner) = open;
        turn.notify_all();
    }

    fn sync(&self) -> SyncFn {
        let door = self.clone();
        Box::new(move || {
            let (lock, turn) = &*door.0;
            let open = lock.lock().unwrap_or_else(PoisonError::into_inner);
            drop(turn.wait_while(open, |open| !*open));
            Ok(())
        })
    }
}

fn insert(c: &mut dyn Conn, k: &str) -> Result<(), DbError> {
    c.execute("INSERT INTO t (k) VALUES ($1)", params![k])
        .map(|_| ())
}

/// Long enough for anything that does not wait for the sync to have come.
const SETTLED: Duration = Duration::from_millis(200);

#[tokio::test]
async fn an_unsynced_write_is_answered_at_its_commit_and_nothing_else_runs_ahead_of_the_sync() {
    let dir = tempfile::tempdir().expect("dir");
    let url = DatabaseUrl::Sqlite(dir.path().join("t.db"));
    let door = Door::default();
    door.set(true);
    let store = Store::open_with(&url, &StoreOptions::default(), Some(door.sync())).expect("open");
    store
        .write(|c: &mut dyn Conn| c.batch("CREATE TABLE t (k TEXT PRIMARY KEY)"))
        .await
        .expect("table");

    door.set(false);
    let background = store.background();
    let ((), unsynced) = tokio::time::timeout(
        Duration::from_secs(10),
        background.write_unsynced(|c: &mut dyn Conn| insert(c, "early")),
    )
    .await
    .expect("answered with the sync held back")
    .expect("written");

    // The same commit, seen from everywhere else: not before its sync.
    let synced = tokio::spawn(unsynced.synced());
    let plain = {
        let store = store.clone();
        tokio::spawn(async move {
            store
                .write_repeatable(|c: &mut dyn Conn| insert(c, "plain"))
                .await
        })
    };
    let read = {
        let store = store.clone();
        tokio::spawn(async move {
            store
                .read(|c: &mut dyn Conn| c.query("SELECT k FROM t ORDER BY k", params![]))
                .await
        })
    };
    tokio::time::sleep(SETTLED).await;
    assert!(!synced.is_finished(), "synced before the sync");
    assert!(!plain.is_finished(), "a write answered before its sync");
    assert!(!read.is_finished(), "a read's result used before the sync");

    door.set(true);
    synced.await.expect("task").expect("synced");
    plain.await.expect("task").expect("written");
    let rows = read.await.expect("task").expect("read");
    let keys: Vec<String> = rows.iter().map(|r| r.text(0).expect("k")).collect();
    assert!(keys.contains(&"early".to_owned()), "{keys:?}");
}

#[tokio::test]
async fn an_unsynced_write_that_fails_leaves_nothing_and_says_why() {
    let dir = tempfile::tempdir().expect("dir");
    let url = DatabaseUrl::Sqlite(dir.path().join("t.db"));
    let store = Store::open(&url, &StoreOptions::default())
        .await
        .expect("open");
    store
        .write(|c: &mut dyn Conn| c.batch("CREATE TABLE t (k TEXT PRIMARY KEY)"))
        .await
        .expect("table");
    let failed = store
        .background()
        .write_unsynced(|c: &mut dyn Conn| {
            insert(c, "gone")?;
            Err::<(), _>(DbError::Other("refused".to_owned()))
        })
        .await;
    assert!(matches!(failed, Err(DbError::Other(ref why)) if why == "refused"));
    let rows = store
        .read(|c: &mut dyn Conn| c.query("SELECT k FROM t", params![]))
        .await
        .expect("read");
    assert!(rows.is_empty(), "a failed write left a row");
}
