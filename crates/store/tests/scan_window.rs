//! Newest-first pages whose filter no index serves read a bounded window of rows: walking the
//! pages by their cursors (a full page's last row, a short page's window end) finds every
//! match exactly once, in order, on both databases, and a page never reads past its window.

#![allow(
    clippy::unwrap_used,
    reason = "tests: a failed unwrap is a failed test"
)]

mod common;

use dialtone_store::search::{Keyset, Scanned, newest_first_within};
use dialtone_store::{DbError, Row, SqlBuilder, Store, StoreOptions, params};

/// Rows of the table: created = id / 3, so three rows share each time (ties by id).
const ROWS: i64 = 100;
/// The matching rows.
const HITS: [i64; 4] = [95, 94, 50, 5];

async fn fill(store: &Store) {
    store
        .write(|c| {
            c.batch(
                "CREATE TABLE t (id BIGINT PRIMARY KEY, account_id BIGINT NOT NULL, \
                 created BIGINT NOT NULL, tag TEXT NOT NULL)",
            )?;
            for id in 1..=ROWS {
                let tag = if HITS.contains(&id) { "hit" } else { "miss" };
                c.execute(
                    "INSERT INTO t (id, account_id, created, tag) VALUES ($1, 7, $2, $3)",
                    params![id, id / 3, tag],
                )?;
                // Another account's hit between every row: never in the pages.
                c.execute(
                    "INSERT INTO t (id, account_id, created, tag) VALUES ($1, 8, $2, 'hit')",
                    params![1000 + id, id / 3],
                )?;
            }
            Ok::<_, DbError>(())
        })
        .await
        .unwrap();
}

async fn page(
    store: &Store,
    by_time: bool,
    after: Option<(i64, i64)>,
    limit: i64,
    window: i64,
) -> Scanned<Row> {
    store
        .read(move |c| {
            let mut indexed = SqlBuilder::new("FROM t WHERE account_id = ");
            indexed.bind(7);
            newest_first_within(
                c,
                "id, created, tag",
                &indexed,
                Some(&|q| {
                    q.push(" AND tag = ").bind("hit");
                }),
                by_time.then_some("created"),
                "id",
                &Keyset { after, limit },
                window,
            )
        })
        .await
        .unwrap()
}

/// Walks every page; returns the ids found and the pages read.
async fn walk(store: &Store, by_time: bool, limit: i64, window: i64) -> (Vec<i64>, usize) {
    let (mut found, mut pages, mut after) = (Vec::new(), 0, None);
    loop {
        let p = page(store, by_time, after, limit, window).await;
        pages += 1;
        assert!(pages <= 100, "the walk does not end");
        let ids: Vec<i64> = p.rows.iter().map(|r| r.int(0).unwrap()).collect();
        found.extend(&ids);
        after = if ids.len() as i64 == limit {
            let last = p.rows.last().unwrap();
            Some((
                if by_time { last.int(1).unwrap() } else { 0 },
                last.int(0).unwrap(),
            ))
        } else {
            p.stopped_at
        };
        if after.is_none() {
            return (found, pages);
        }
    }
}

async fn every_match_once_in_order(store: &Store) {
    fill(store).await;
    for by_time in [false, true] {
        // A window of 10 over 100 rows: the walk reads them in 10 windows or so, each page
        // short until the window ends, and finds the four hits in order.
        let (found, pages) = walk(store, by_time, 3, 10).await;
        assert_eq!(found, HITS, "by_time {by_time}");
        assert!(
            (10..=12).contains(&pages),
            "{pages} pages, by_time {by_time}"
        );
        // A window past every row: one page per 3 hits, then the end.
        let (found, pages) = walk(store, by_time, 3, 1000).await;
        assert_eq!(found, HITS);
        assert_eq!(pages, 2);
    }
    // The first window holds rows 100..91: hits 95 and 94, short of the limit, so the page
    // says where its window stopped, row 91 (created 30).
    let p = page(store, true, None, 3, 10).await;
    assert_eq!(p.rows.len(), 2);
    assert_eq!(p.stopped_at, Some((30, 91)));
    // A page that fills says nothing of the window: its last row is the cursor.
    let p = page(store, true, None, 2, 10).await;
    assert_eq!(p.rows.len(), 2);
    assert_eq!(p.stopped_at, None);
}

#[tokio::test]
async fn sqlite_finds_every_match_once_in_order() {
    let (store, _dir) = common::sqlite().await;
    every_match_once_in_order(&store).await;
}

#[tokio::test]
async fn postgres_finds_every_match_once_in_order() {
    let Some((store, schema)) = common::postgres("scanwin", &StoreOptions::default()).await else {
        return;
    };
    every_match_once_in_order(&store).await;
    drop(store);
    drop(schema);
}
