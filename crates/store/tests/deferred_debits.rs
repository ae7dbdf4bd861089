//! Debits in a batch of writes: on PostgreSQL they wait for the end of the batch (see the
//! `debits` module), on SQLite they are immediate; either way a batch whose second write
//! debits and then fails keeps only the debits of the writes it kept, a later debit is checked
//! against what the kept ones took, and the ledger lines carry the balance after each.

#![allow(
    clippy::unwrap_used,
    reason = "tests: a failed unwrap is a failed test"
)]

mod common;

use dialtone_domain::account::BillingMode;
use dialtone_domain::{Money, Timestamp};
use dialtone_store::billing::{self, Spend};
use dialtone_store::{DbError, Store, StoreOptions, accounts, migrate, params};

const NOW: Timestamp = Timestamp::from_millis(1_750_000_000_000);

async fn account(store: &Store) -> i64 {
    store
        .write(|c| {
            accounts::create(
                c,
                &accounts::NewAccount {
                    name: "batch".into(),
                    parent_id: None,
                    currency: "EUR".into(),
                    billing_mode: BillingMode::Prepaid,
                    credit: Money::from_cents(10),
                    login: None,
                    password_hash: String::new(),
                    key_hash: "k".into(),
                    key_id: "k".into(),
                    warning_level: Money::ZERO,
                    shutdown_level: Money::from_cents(-100),
                },
                NOW,
            )
        })
        .await
        .unwrap()
        .id
}

/// Waits (at most 10 s) until `n` writes are queued or running: the writes submitted so
/// far are in line.
async fn in_flight(store: &Store, n: usize) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while std::time::Instant::now() < deadline {
        if store.writes_in_flight() >= n {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(1)).await;
    }
    panic!("{n} writes never got in line");
}

/// A debit of `cents` as a repeatable write that fails after it when `fail` is set.
fn debit(
    store: &Store,
    id: i64,
    cents: i64,
    fail: bool,
) -> tokio::task::JoinHandle<Result<Spend, DbError>> {
    let store = store.clone();
    tokio::spawn(async move {
        store
            .write_repeatable(move |c| {
                let spent = billing::debit(c, id, Money::from_cents(cents), "sms", "t", NOW)?;
                if fail {
                    return Err(DbError::Other("the write failed after its debit".into()));
                }
                Ok(spent)
            })
            .await
    })
}

async fn only_kept_writes_debit(store: &Store) {
    migrate::run(store).await.unwrap();
    let id = account(store).await;
    // The one writer waits for the test's word, so the four debits queue behind it and run
    // as one batch, in the order they were submitted.
    let (go, wait) = std::sync::mpsc::channel::<()>();
    let gate = {
        let store = store.clone();
        tokio::spawn(async move {
            store
                .write(move |_| {
                    wait.recv().map_err(|e| DbError::Other(e.to_string()))?;
                    Ok::<_, DbError>(())
                })
                .await
        })
    };
    in_flight(store, 1).await;
    let a = debit(store, id, 3, false);
    in_flight(store, 2).await;
    let b = debit(store, id, 3, true);
    in_flight(store, 3).await;
    let c = debit(store, id, 3, false);
    in_flight(store, 4).await;
    let d = debit(store, id, 5, false);
    in_flight(store, 5).await;
    go.send(()).unwrap();
    gate.await.unwrap().unwrap();
    let three_left = |cents| Spend::Done {
        balance: Money::from_cents(cents),
    };
    assert_eq!(a.await.unwrap().unwrap(), three_left(7));
    assert!(b.await.unwrap().is_err(), "the failed write");
    assert_eq!(c.await.unwrap().unwrap(), three_left(4));
    assert_eq!(
        d.await.unwrap().unwrap(),
        Spend::Insufficient {
            balance: Money::from_cents(4)
        },
        "5.00 against the 4.00 the kept debits left"
    );
    let (credit, sum, lines) = store
        .read(move |c| {
            let lines = c
                .query(
                    "SELECT amount, balance_after FROM ledger WHERE account_id = $1 AND kind = 'sms' ORDER BY id",
                    params![id],
                )?
                .iter()
                .map(|r| Ok((r.money(0)?, r.money(1)?)))
                .collect::<Result<Vec<_>, DbError>>()?;
            Ok::<_, DbError>((billing::balance(c, id)?, billing::ledger_sum(c, id)?, lines))
        })
        .await
        .unwrap();
    assert_eq!(credit, Money::from_cents(4));
    assert_eq!(sum, credit, "the balance is the sum of the ledger");
    assert_eq!(
        lines,
        [
            (Money::from_cents(-3), Money::from_cents(7)),
            (Money::from_cents(-3), Money::from_cents(4)),
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_keeps_only_the_kept_writes_debits() {
    let (store, _dir) = common::sqlite().await;
    only_kept_writes_debit(&store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_keeps_only_the_kept_writes_debits() {
    let options = StoreOptions {
        connections: 1,
        ..StoreOptions::default()
    };
    let Some((store, schema)) = common::postgres("deferdeb", &options).await else {
        return;
    };
    only_kept_writes_debit(&store).await;
    drop(store);
    drop(schema);
}
