//! Group commit keeps each write's all-or-nothing meaning: a write that fails leaves nothing
//! behind, the writes committed with it are kept and see only kept changes, and a repeatable
//! write's answer is that of its last run. On SQLite and, with DIALTONE_TEST_DATABASE_URL,
//! on PostgreSQL (in a schema of its own).

#![allow(
    clippy::unwrap_used,
    clippy::too_many_lines,
    reason = "tests: a failed unwrap is a failed test, and a scenario reads best whole"
)]

use std::sync::mpsc;
use std::time::Duration;

mod common;

use dialtone_store::{Conn, DbError, Store, StoreOptions, params};

#[derive(Debug)]
enum Failure {
    Refused,
    Db(DbError),
}

impl From<DbError> for Failure {
    fn from(e: DbError) -> Self {
        Self::Db(e)
    }
}

fn insert(c: &mut dyn Conn, key: &str, by: &str) -> Result<(), DbError> {
    c.execute(
        "INSERT INTO t (k, by_job) VALUES ($1, $2)",
        params![key, by],
    )
    .map(|_| ())
}

async fn rows(store: &Store) -> Vec<(String, String)> {
    store
        .read(|c| {
            c.query("SELECT k, by_job FROM t ORDER BY k", params![])?
                .iter()
                .map(|r| Ok((r.text(0)?, r.text(1)?)))
                .collect::<Result<Vec<_>, DbError>>()
        })
        .await
        .expect("read the table")
}

/// Holds the writer until every other write is queued, so they commit in one batch, then
/// checks what each was answered and what the table holds.
async fn one_batch(store: &Store) {
    let (release, wait) = mpsc::channel::<()>();
    let blocker = store.write(move |_c| {
        let _ = wait.recv_timeout(Duration::from_secs(10));
        Ok::<_, DbError>(())
    });
    // `join!` polls its futures in order: each write is queued before the release runs.
    let (blocked, first, failed, second, db_error, once, counted, ()) = tokio::join!(
        blocker,
        store.write_repeatable(|c| insert(c, "a", "first").map_err(Failure::from)),
        // Fails after writing two rows: neither may stay.
        store.write_repeatable(|c| {
            insert(c, "dup", "failed")?;
            insert(c, "only-failed", "failed")?;
            Err::<(), _>(Failure::Refused)
        }),
        // Writes the key the failed write wrote: it must succeed.
        store.write_repeatable(|c| insert(c, "dup", "second").map_err(Failure::from)),
        // A database error (the key exists since before the batch).
        store.write_repeatable(|c| insert(c, "pre", "db-error").map_err(Failure::from)),
        store.write(|c| insert(c, "once", "once")),
        // Answers what it saw: its last run sees kept rows only.
        store.write_repeatable(|c| {
            let seen = c
                .query("SELECT k FROM t WHERE by_job = 'failed'", params![])?
                .len();
            insert(c, "z", "counted")?;
            Ok::<_, Failure>(seen)
        }),
        async move {
            let _ = release.send(());
        },
    );
    blocked.expect("the blocking write");
    first.expect("the first write is kept");
    assert!(matches!(failed, Err(Failure::Refused)), "{failed:?}");
    second.expect("a write after a failed one does not see its rows");
    assert!(
        matches!(db_error, Err(Failure::Db(DbError::UniqueViolation(_)))),
        "{db_error:?}"
    );
    once.expect("a once write in the same batch is kept");
    assert_eq!(counted.expect("the counting write"), 0);
    let expected: Vec<(String, String)> = [
        ("a", "first"),
        ("dup", "second"),
        ("once", "once"),
        ("pre", "before"),
        ("z", "counted"),
    ]
    .iter()
    .map(|(k, b)| ((*k).to_owned(), (*b).to_owned()))
    .collect();
    assert_eq!(rows(store).await, expected);
}

/// A write alone in its batch, repeatable or once, that fails after writing leaves nothing
/// (it runs without a savepoint: its transaction is what is rolled back), and one that
/// writes nothing leaves the connection ready for the next.
async fn lone_writes(store: &Store) {
    let failed = store
        .write_repeatable(|c| {
            insert(c, "lone-repeatable", "failed")?;
            Err::<(), _>(Failure::Refused)
        })
        .await;
    assert!(matches!(failed, Err(Failure::Refused)), "{failed:?}");
    let failed = store
        .write(|c| {
            insert(c, "lone-once", "failed")?;
            Err::<(), _>(Failure::Refused)
        })
        .await;
    assert!(matches!(failed, Err(Failure::Refused)), "{failed:?}");
    // One that writes nothing ends its transaction cleanly: the next write is kept.
    store
        .write(|_c| Ok::<_, DbError>(()))
        .await
        .expect("an empty write");
    store
        .write(|c| insert(c, "lone-kept", "kept"))
        .await
        .expect("a write after them");
    let lone: Vec<(String, String)> = rows(store)
        .await
        .into_iter()
        .filter(|(k, _)| k.starts_with("lone"))
        .collect();
    assert_eq!(lone, vec![("lone-kept".to_owned(), "kept".to_owned())]);
}

async fn prepare(store: &Store) {
    store
        .write(|c| {
            c.batch("CREATE TABLE t (k TEXT PRIMARY KEY, by_job TEXT NOT NULL)")?;
            insert(c, "pre", "before")
        })
        .await
        .expect("create the table");
}

#[tokio::test]
async fn failed_writes_leave_nothing_and_spare_their_batch_sqlite() {
    let (store, _dir) = common::sqlite().await;
    prepare(&store).await;
    one_batch(&store).await;
    lone_writes(&store).await;
}

#[tokio::test]
async fn failed_writes_leave_nothing_and_spare_their_batch_postgres() {
    // One connection: every write goes through the same queue and batches.
    let options = StoreOptions {
        connections: 1,
        ..StoreOptions::default()
    };
    let Some((store, _schema)) = common::postgres("gc", &options).await else {
        return;
    };
    prepare(&store).await;
    one_batch(&store).await;
    lone_writes(&store).await;
    drop(store);
}

/// A write counts as in flight from its submission until its caller has the answer or stops
/// waiting for it (the SMS worker sizes its batches by this count).
async fn in_flight_count(store: &Store) {
    assert_eq!(store.writes_in_flight(), 0);
    let (release, wait) = mpsc::channel::<()>();
    let blocker = store.write(move |_c| {
        let _ = wait.recv_timeout(Duration::from_secs(10));
        Ok::<_, DbError>(())
    });
    let mut abandoned = Box::pin(store.write(|c| insert(c, "abandoned", "abandoned")));
    let (blocked, first, second, seen) = tokio::join!(
        blocker,
        store.write(|c| insert(c, "b", "first")),
        store.write(|c| insert(c, "c", "second")),
        async {
            // Submitted, then given up while it waits behind the blocker.
            tokio::select! {
                biased;
                _ = &mut abandoned => panic!("answered while the writer is held"),
                () = std::future::ready(()) => {}
            }
            let with_abandoned = store.writes_in_flight();
            drop(abandoned);
            let seen = (with_abandoned, store.writes_in_flight());
            let _ = release.send(());
            seen
        },
    );
    blocked.expect("the blocking write");
    first.expect("first");
    second.expect("second");
    assert_eq!(
        seen,
        (4, 3),
        "blocker, two queued and the abandoned one, then without it"
    );
    assert_eq!(store.writes_in_flight(), 0, "every answer taken");
}

#[tokio::test]
async fn writes_in_flight_counts_until_the_answer_sqlite() {
    let (store, _dir) = common::sqlite().await;
    prepare(&store).await;
    in_flight_count(&store).await;
}

#[tokio::test]
async fn writes_in_flight_counts_until_the_answer_postgres() {
    let options = StoreOptions {
        connections: 1,
        ..StoreOptions::default()
    };
    let Some((store, _schema)) = common::postgres("inflight", &options).await else {
        return;
    };
    prepare(&store).await;
    in_flight_count(&store).await;
    drop(store);
}

/// Two writes on two PostgreSQL connections lock the same two rows in opposite orders: the
/// database breaks the deadlock by failing one, and the store runs that one again alone, so
/// both callers are answered with success and both changes are kept.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_that_lost_a_deadlock_runs_again() {
    let options = StoreOptions {
        connections: 2,
        ..StoreOptions::default()
    };
    let Some((store, _schema)) = common::postgres("t_deadlock", &options).await else {
        return;
    };
    store
        .write(|c| {
            c.batch(
                "CREATE TABLE pair (k TEXT PRIMARY KEY, n BIGINT NOT NULL); \
                 INSERT INTO pair VALUES ('a', 0), ('b', 0)",
            )
        })
        .await
        .expect("table");
    let bump = |first: &'static str, second: &'static str| {
        let store = store.clone();
        async move {
            store
                .write_repeatable(move |c| {
                    c.execute("UPDATE pair SET n = n + 1 WHERE k = $1", params![first])?;
                    // Both hold their first row when they ask for the other's.
                    std::thread::sleep(Duration::from_millis(300));
                    c.execute("UPDATE pair SET n = n + 1 WHERE k = $1", params![second])?;
                    Ok::<_, DbError>(())
                })
                .await
        }
    };
    let (ab, ba) = tokio::join!(bump("a", "b"), bump("b", "a"));
    assert!(ab.is_ok() && ba.is_ok(), "{ab:?} {ba:?}");
    let counts = store
        .read(|c| {
            c.query("SELECT n FROM pair ORDER BY k", params![])?
                .iter()
                .map(|r| r.int(0))
                .collect::<Result<Vec<_>, DbError>>()
        })
        .await
        .expect("read");
    assert_eq!(counts, [2, 2], "each write counted once");
}
