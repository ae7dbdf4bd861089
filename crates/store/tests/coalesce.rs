//! Requests run in groups (`coalesce`): concurrent requests share one write; a request its
//! group refuses leaves nothing and the others are kept; a group that fails as a whole (a
//! statement error) runs each request again alone, so only the bad one fails; debits of a
//! group stop exactly at a prepaid floor. On both databases.

#![allow(
    clippy::unwrap_used,
    reason = "tests: a failed unwrap is a failed test"
)]

mod common;

use dialtone_domain::{Money, Timestamp};
use dialtone_store::billing::{self, Spend};
use dialtone_store::coalesce::{Coalesced, Coalescer, GroupResults};
use dialtone_store::{Conn, DbError, Store, StoreOptions, migrate, params};

const NOW: Timestamp = Timestamp::from_millis(1_750_000_000_000);

/// A note to write: refused by its group when `refused`; debits `price` from `account`.
struct Note {
    key: String,
    refused: bool,
    account: i64,
    price: Money,
}

#[derive(Debug)]
enum NoteError {
    Refused,
    Poor,
    Db(DbError),
}

impl From<DbError> for NoteError {
    fn from(e: DbError) -> Self {
        Self::Db(e)
    }
}

impl Coalesced for Note {
    type Output = ();
    type Error = NoteError;

    fn run_all(c: &mut dyn Conn, items: &[Self]) -> GroupResults<Self> {
        // Each group that commits leaves its size (a request run alone: 1).
        c.execute(
            "INSERT INTO groups_run (size) VALUES ($1)",
            params![items.len()],
        )?;
        let mut out = Vec::new();
        for item in items {
            if item.refused {
                out.push(Err(NoteError::Refused));
                continue;
            }
            if item.price > Money::ZERO
                && let Spend::Insufficient { .. } =
                    billing::debit(c, item.account, item.price, "note", &item.key, NOW)?
            {
                out.push(Err(NoteError::Poor));
                continue;
            }
            // A key already written fails the whole statement, and with it the group.
            c.execute(
                "INSERT INTO notes (key) VALUES ($1)",
                params![item.key.as_str()],
            )?;
            out.push(Ok(()));
        }
        Ok(out)
    }
}

async fn account(store: &Store, credit: Money) -> i64 {
    common::prepaid_account(store, "groups", credit, Money::from_cents(-1_000_000), NOW).await
}

/// `notes` at once through one coalescer; each request's outcome, in order.
async fn send(coalescer: &Coalescer<Note>, notes: Vec<Note>) -> Vec<Result<(), NoteError>> {
    let tasks: Vec<_> = notes
        .into_iter()
        .map(|note| {
            let coalescer = coalescer.clone();
            tokio::spawn(async move { coalescer.run(note).await })
        })
        .collect();
    let mut out = Vec::new();
    for t in tasks {
        out.push(t.await.unwrap());
    }
    out
}

async fn keys(store: &Store) -> Vec<String> {
    store
        .read(|c| {
            c.query("SELECT key FROM notes ORDER BY key", params![])?
                .iter()
                .map(|r| r.text(0))
                .collect::<Result<Vec<_>, DbError>>()
        })
        .await
        .unwrap()
}

fn note(key: String, refused: bool, account: i64, price: Money) -> Note {
    Note {
        key,
        refused,
        account,
        price,
    }
}

async fn groups(store: &Store) {
    migrate::run(store).await.unwrap();
    store
        .write(|c| {
            c.batch("CREATE TABLE notes (key TEXT PRIMARY KEY); CREATE TABLE groups_run (size BIGINT NOT NULL)")
        })
        .await
        .unwrap();
    let id = account(store, Money::from_cents(1_000)).await;
    let coalescer = Coalescer::<Note>::new(store.clone());

    // 300 requests at once, every tenth refused by its group.
    let notes = (0..300)
        .map(|i| note(format!("a{i:03}"), i % 10 == 0, id, Money::ZERO))
        .collect();
    let results = send(&coalescer, notes).await;
    let (groups, largest) = store
        .read(|c| {
            let r = c.query_one("SELECT COUNT(*), MAX(size) FROM groups_run", params![])?;
            Ok::<_, DbError>((r.int(0)?, r.int(1)?))
        })
        .await
        .unwrap();
    assert!(
        groups < 300 && largest > 1,
        "requests shared writes: {groups} groups for 300 requests, at most {largest} in one"
    );
    for (i, r) in results.iter().enumerate() {
        assert_eq!(r.is_ok(), i % 10 != 0, "request {i}: {r:?}");
    }
    let written = keys(store).await;
    assert_eq!(written.len(), 270, "the refused requests wrote nothing");
    assert!(!written.contains(&"a000".to_owned()));

    // A key already written fails its group's statement: each request runs again alone, and
    // only that one fails.
    let mut notes: Vec<Note> = (0..60)
        .map(|i| note(format!("b{i:03}"), false, id, Money::ZERO))
        .collect();
    notes.push(note("a001".into(), false, id, Money::ZERO));
    let results = send(&coalescer, notes).await;
    assert!(
        matches!(
            results.last().unwrap(),
            Err(NoteError::Db(DbError::UniqueViolation(_)))
        ),
        "{:?}",
        results.last()
    );
    assert!(results[..60].iter().all(Result::is_ok), "{results:?}");
    assert_eq!(keys(store).await.len(), 330);

    // Debits in groups: 1,000 cents covers exactly 33 of 30, and never goes below zero.
    let notes = (0..50)
        .map(|i| note(format!("c{i:03}"), false, id, Money::from_cents(30)))
        .collect();
    let results = send(&coalescer, notes).await;
    let taken = results.iter().filter(|r| r.is_ok()).count();
    assert_eq!(taken, 33, "{results:?}");
    assert!(
        results
            .iter()
            .all(|r| matches!(r, Ok(()) | Err(NoteError::Poor))),
        "{results:?}"
    );
    let (balance, sum) = store
        .read(move |c| Ok::<_, DbError>((billing::balance(c, id)?, billing::ledger_sum(c, id)?)))
        .await
        .unwrap();
    assert_eq!(balance, Money::from_cents(10));
    assert_eq!(sum, balance, "every debit is in the ledger");
    assert_eq!(
        keys(store).await.len(),
        363,
        "a refused debit wrote nothing"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_requests_run_in_groups() {
    let (store, _dir) = common::sqlite().await;
    groups(&store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_requests_run_in_groups() {
    let options = StoreOptions {
        connections: 4,
        ..StoreOptions::default()
    };
    let Some((store, schema)) = common::postgres("groups", &options).await else {
        return;
    };
    groups(&store).await;
    drop(store);
    drop(schema);
}
