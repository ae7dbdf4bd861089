//! SQLite checkpoints: the checkpointer thread copies the WAL into the database file beside
//! the writer, the writer makes the WAL start over, so the WAL file stays bounded under a
//! steady write load, and every committed row is there when the database is opened again.
//! (PostgreSQL checkpoints by itself: nothing of this runs there.)

#![allow(
    clippy::unwrap_used,
    clippy::too_many_lines,
    reason = "tests: a failed unwrap is a failed test, and a scenario reads best whole"
)]

use std::time::{Duration, Instant};

use dialtone_store::{DatabaseUrl, DbError, Store, StoreOptions, params};

/// Transactions of the load, and rows of about 2 KB each: 15 pages a transaction, 7,500 WAL
/// frames in all, past the size at which the writer checkpoints (4,000).
const TRANSACTIONS: i64 = 500;
const ROWS: i64 = 30;
/// A WAL frame: a 4 KB page and its 24-byte header.
const FRAME: u64 = 4096 + 24;

async fn count(store: &Store) -> i64 {
    store
        .read(|c| c.query_one("SELECT COUNT(*) FROM t", params![])?.int(0))
        .await
        .expect("count the rows")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_wal_is_copied_beside_the_writer_and_stays_bounded() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("t.db");
    let store = Store::open(&DatabaseUrl::Sqlite(path.clone()), &StoreOptions::default())
        .await
        .expect("open SQLite");
    let wal = dir.path().join("t.db-wal");
    store
        .write(|c| c.batch("CREATE TABLE t (id INTEGER PRIMARY KEY, data BLOB NOT NULL)"))
        .await
        .expect("create the table");
    let mut largest_wal = 0;
    for tx in 0..TRANSACTIONS {
        store
            .write(move |c| {
                for i in 0..ROWS {
                    c.execute(
                        "INSERT INTO t (id, data) VALUES ($1, zeroblob(2000))",
                        params![tx * ROWS + i],
                    )?;
                }
                Ok::<_, DbError>(())
            })
            .await
            .expect("insert");
        largest_wal = largest_wal.max(std::fs::metadata(&wal).map_or(0, |m| m.len()));
    }
    // The checkpointer runs on its own thread: wait (boundedly) for its first checkpoint.
    let deadline = Instant::now() + Duration::from_secs(10);
    let stats = loop {
        let stats = store.checkpoints().expect("SQLite counts its checkpoints");
        if stats.background > 0 || Instant::now() > deadline {
            break stats;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    assert!(stats.background > 0, "no background checkpoint: {stats:?}");
    assert!(
        stats.writer > 0,
        "the writer never made the WAL start over: {stats:?}"
    );
    // Without checkpoints the WAL would hold all 7,500 frames; the writer starts it over at
    // 4,000, or 1,000 frames later if the checkpointer thread held a lock the restart needs
    // at that moment.
    assert!(
        largest_wal <= 5_100 * FRAME,
        "the WAL grew to {largest_wal} bytes ({} frames)",
        largest_wal / FRAME
    );
    assert_eq!(count(&store).await, TRANSACTIONS * ROWS);
    drop(store);

    let again = Store::open(&DatabaseUrl::Sqlite(path), &StoreOptions::default())
        .await
        .expect("open again");
    assert_eq!(count(&again).await, TRANSACTIONS * ROWS);
}
