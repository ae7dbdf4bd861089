//! Background work's writes ([`Store::background`]) on PostgreSQL: never committed in one
//! transaction with requests' writes, never holding every connection while a request
//! waits, and never stopped by a load of requests. On SQLite they go through the one writer
//! like any other write.

#![allow(
    clippy::unwrap_used,
    reason = "tests: a failed unwrap is a failed test"
)]

use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

mod common;

use dialtone_store::test_schema::TestSchema;
use dialtone_store::{Conn, DatabaseUrl, DbError, Store, StoreOptions, params};

/// Longest wait for something that should happen at once: past it the test fails.
const PATIENCE: Duration = Duration::from_secs(10);

/// A write that says when it started, then holds its connection until released.
fn held(
    store: &Store,
    started: mpsc::Sender<()>,
    release: mpsc::Receiver<()>,
) -> impl Future<Output = Result<(), DbError>> + use<> {
    let store = store.clone();
    async move {
        store
            .write(move |_c| {
                let _ = started.send(());
                let _ = release.recv_timeout(PATIENCE);
                Ok::<_, DbError>(())
            })
            .await
    }
}

/// The id of the transaction a write ran in, and `name` noted in `order` when it ran.
fn noting(
    name: &'static str,
    order: &Arc<Mutex<Vec<&'static str>>>,
) -> impl FnOnce(&mut dyn Conn) -> Result<i64, DbError> + Send + 'static {
    let order = order.clone();
    move |c| {
        order.lock().unwrap().push(name);
        c.query_one("SELECT txid_current()", params![])?.int(0)
    }
}

/// A store on a PostgreSQL schema of its own (named from `prefix`) with `connections`.
async fn postgres(prefix: &str, connections: usize) -> Option<(Store, TestSchema)> {
    let options = StoreOptions {
        connections,
        ..StoreOptions::default()
    };
    common::postgres(prefix, &options).await
}

/// Two connections, two background writes held: the second waits for a place, and a
/// request is answered meanwhile on the connection left to requests. Repeated: which idle
/// connection takes which job is up to the threads, and the case to catch is the one where
/// the connection left free is offered the second background write first.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn background_work_leaves_a_connection_to_requests() {
    let Some((store, _schema)) = postgres("bg_room", 2).await else {
        return;
    };
    let background = store.background();
    for _ in 0..20 {
        let (first_started, first_running) = mpsc::channel();
        let (release_first, first_release) = mpsc::channel();
        let first = tokio::spawn(held(&background, first_started, first_release));
        first_running
            .recv_timeout(PATIENCE)
            .expect("the first background write runs");
        let (second_started, second_running) = mpsc::channel();
        let (release_second, second_release) = mpsc::channel();
        let second = tokio::spawn(held(&background, second_started, second_release));
        in_flight(&store, 2).await;
        let request = a_request(&store).await;
        assert!(
            matches!(request, Ok(Ok(()))),
            "a request is answered while background work holds a connection: {request:?}"
        );
        assert!(
            second_running.try_recv().is_err(),
            "the second background write took the last connection"
        );
        release_first.send(()).unwrap();
        second_running
            .recv_timeout(PATIENCE)
            .expect("the second background write runs once the first ended");
        release_second.send(()).unwrap();
        first.await.unwrap().unwrap();
        second.await.unwrap().unwrap();
    }
}

/// The pool a PostgreSQL store gets when none is configured
/// ([`StoreOptions::default_connections`]: one connection per core, 2 to 4): background work
/// holding every connection it may still leaves requests one, and the size stays within
/// its bounds on any machine.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_default_pool_leaves_requests_a_connection() {
    let n = StoreOptions::default_connections(&DatabaseUrl::Postgres(String::new()));
    assert!((2..=4).contains(&n), "default PostgreSQL connections: {n}");
    assert_eq!(
        StoreOptions::default_connections(&DatabaseUrl::Sqlite("t.db".into())),
        4,
        "SQLite readers by default"
    );
    let Some((store, _schema)) = postgres("bg_default", n).await else {
        return;
    };
    let background = store.background();
    // Every connection background work may hold: all but one, and with one connection
    // that one.
    let most = (n - 1).max(1);
    let mut held_writes = Vec::new();
    for _ in 0..most {
        let (started, running) = mpsc::channel();
        let (release, released) = mpsc::channel();
        held_writes.push((tokio::spawn(held(&background, started, released)), release));
        running
            .recv_timeout(PATIENCE)
            .expect("a background write runs while places are free");
    }
    let request = a_request(&store).await;
    assert!(
        matches!(request, Ok(Ok(()))),
        "a request is answered while background work holds {most} of {n} connections: {request:?}"
    );
    for (write, release) in held_writes {
        release.send(()).unwrap();
        write.await.unwrap().unwrap();
    }
}

/// A request's write, waited for at most [`PATIENCE`].
async fn a_request(store: &Store) -> Result<Result<(), DbError>, tokio::time::error::Elapsed> {
    tokio::time::timeout(
        PATIENCE,
        store.write(|c| c.query_one("SELECT 1", params![]).map(|_| ())),
    )
    .await
}

/// Waits until `n` writes are in flight (submitted, not yet answered).
async fn in_flight(store: &Store, n: usize) {
    tokio::time::timeout(PATIENCE, async {
        while store.writes_in_flight() < n {
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("the writes are queued");
}

/// One connection, held by a request while more requests and a background write queue:
/// the background write runs next, before the requests that came before it, and in a
/// transaction of its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn background_work_moves_on_under_requests_and_commits_apart() {
    let Some((store, _schema)) = postgres("bg_turn", 1).await else {
        return;
    };
    let order = Arc::new(Mutex::new(Vec::new()));
    let (started, running) = mpsc::channel();
    let (release, released) = mpsc::channel();
    let blocker = tokio::spawn(held(&store, started, released));
    running
        .recv_timeout(PATIENCE)
        .expect("the request holding the connection runs");
    let queued = {
        let (store, background, order) = (store.clone(), store.background(), order.clone());
        tokio::spawn(async move {
            // `join!` polls in order, and a write is sent when first polled: the background
            // write is in its queue before the requests are counted in flight.
            let (background, one, two) = tokio::join!(
                background.write(noting("background", &order)),
                store.write(noting("request 1", &order)),
                store.write(noting("request 2", &order)),
            );
            (one, two, background)
        })
    };
    // The three are queued once the writes in flight count them with the blocker.
    in_flight(&store, 4).await;
    release.send(()).unwrap();
    blocker.await.unwrap().unwrap();
    let (one, two, background) = queued.await.unwrap();
    let (one, two, background) = (one.unwrap(), two.unwrap(), background.unwrap());
    assert_eq!(
        *order.lock().unwrap(),
        ["background", "request 1", "request 2"],
        "the connection that takes background work first took it first"
    );
    assert_eq!(one, two, "the requests queued together commit together");
    assert_ne!(
        one, background,
        "background work commits apart from requests"
    );
}

/// A background write that panics ends its connection's thread, but gives back its place:
/// the background work after it still runs, on the connection left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panicking_background_write_gives_its_place_back() {
    let Some((store, _schema)) = postgres("bg_panic", 2).await else {
        return;
    };
    let background = store.background();
    let panicked = background
        .write(|_c| -> Result<(), DbError> { panic!("a worker's bug") })
        .await;
    assert!(matches!(panicked, Err(DbError::Closed)), "{panicked:?}");
    let after = tokio::time::timeout(
        PATIENCE,
        background.write(|c| c.query_one("SELECT 1", params![]).map(|_| ())),
    )
    .await;
    assert!(
        matches!(after, Ok(Ok(()))),
        "background work runs after a panic: {after:?}"
    );
}

/// On SQLite background writes go through the one writer and are committed like others.
#[tokio::test]
async fn background_writes_commit_on_sqlite() {
    let (store, _dir) = common::sqlite().await;
    store
        .background()
        .write(|c| c.batch("CREATE TABLE t (k TEXT PRIMARY KEY)"))
        .await
        .unwrap();
    store
        .background()
        .write_repeatable(|c| c.execute("INSERT INTO t (k) VALUES ($1)", params!["kept"]))
        .await
        .unwrap();
    let kept = store
        .read(|c| c.query_one("SELECT k FROM t", params![])?.text(0))
        .await
        .unwrap();
    assert_eq!(kept, "kept");
}
