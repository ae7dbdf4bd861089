//! Debits racing on one account from every connection (PostgreSQL: four connections, each a
//! holder of credit slices; SQLite: its one writer): far from the floor the holders debit
//! slices of their own; at the floor every slice goes back, so exactly as many debits pass as
//! the balance covers, none takes it below zero, and the balance (credit and slices) is the
//! sum of the ledger throughout. A postpaid account goes below zero the same way.

#![allow(
    clippy::unwrap_used,
    reason = "tests: a failed unwrap is a failed test"
)]

mod common;

use dialtone_domain::account::BillingMode;
use dialtone_domain::{Money, Timestamp};
use dialtone_store::billing::{self, Spend};
use dialtone_store::{DbError, Dialect, Store, StoreOptions, accounts, migrate, params};

const NOW: Timestamp = Timestamp::from_millis(1_750_000_000_000);

async fn account(store: &Store, mode: BillingMode, credit: Money) -> i64 {
    account_tagged(store, mode, credit, "").await
}

async fn account_tagged(store: &Store, mode: BillingMode, credit: Money, tag: &str) -> i64 {
    let tag = tag.to_owned();
    store
        .write(move |c| {
            accounts::create(
                c,
                &accounts::NewAccount {
                    name: "slices".into(),
                    parent_id: None,
                    currency: "EUR".into(),
                    billing_mode: mode,
                    credit,
                    login: None,
                    password_hash: String::new(),
                    key_hash: format!("k{}{tag}", mode.as_str()),
                    key_id: format!("k{}{tag}", mode.as_str()),
                    warning_level: Money::ZERO,
                    shutdown_level: Money::from_cents(-1_000_000),
                },
                NOW,
            )
        })
        .await
        .unwrap()
        .id
}

/// `n` debits of `price` at once, as the hot paths write them; how many were taken.
async fn race(store: &Store, id: i64, n: usize, price: Money) -> usize {
    let tasks: Vec<_> = (0..n)
        .map(|i| {
            let store = store.clone();
            tokio::spawn(async move {
                store
                    .write_repeatable(move |c| {
                        billing::debit(c, id, price, "sms", &format!("race-{i}"), NOW)
                    })
                    .await
            })
        })
        .collect();
    let mut taken = 0;
    for t in tasks {
        match t.await.unwrap().unwrap() {
            Spend::Done { .. } => taken += 1,
            Spend::Insufficient { .. } => {}
        }
    }
    taken
}

/// The balance, the ledger's sum and lowest balance, and the account's slices.
async fn books(store: &Store, id: i64) -> (Money, Money, Option<Money>, i64) {
    store
        .read(move |c| {
            let slices = c
                .query_one(
                    "SELECT COUNT(*) FROM credit_slices WHERE account_id = $1",
                    params![id],
                )?
                .int(0)?;
            Ok::<_, DbError>((
                billing::balance(c, id)?,
                billing::ledger_sum(c, id)?,
                billing::lowest_balance(c, id)?,
                slices,
            ))
        })
        .await
        .unwrap()
}

async fn race_to_the_floor(store: &Store) {
    migrate::run(store).await.unwrap();
    // Enough that a slice is taken whatever the batches (a slice needs 1,024 times the
    // batch's debit on the row, and a batch holds up to 256 debits of 4.00).
    let id = account(store, BillingMode::Prepaid, Money::from_cents(10_000_000)).await;
    // Far from the floor: every debit passes.
    assert_eq!(race(store, id, 600, Money::from_cents(4)).await, 600);
    let (balance, sum, _, slices) = books(store, id).await;
    assert_eq!(balance, Money::from_cents(10_000_000 - 600 * 4));
    assert_eq!(sum, balance, "the balance is the sum of the ledger");
    match store.dialect() {
        Dialect::Postgres => assert!(slices > 0, "the holders debited slices of their own"),
        Dialect::Sqlite => assert_eq!(slices, 0, "one writer takes no slice"),
    }
    // To the floor: 9,997,600.00 covers 490 debits of 20,400.00, and 1,600.00 is left.
    assert_eq!(race(store, id, 500, Money::from_cents(20_400)).await, 490);
    let (balance, sum, lowest, _) = books(store, id).await;
    assert_eq!(
        balance,
        Money::from_cents(1_600),
        "no credit stranded in a slice"
    );
    assert_eq!(sum, balance, "the balance is the sum of the ledger");
    assert!(lowest.unwrap() >= Money::ZERO, "never below zero");
    // A postpaid account has no floor.
    let post = account(store, BillingMode::Postpaid, Money::ZERO).await;
    assert_eq!(race(store, post, 300, Money::from_cents(3)).await, 300);
    let (balance, sum, _, _) = books(store, post).await;
    assert_eq!(balance, Money::from_cents(-900));
    assert_eq!(sum, balance, "the balance is the sum of the ledger");
}

/// `n` debits of `price` of each account at once, the accounts' interleaved so that batches
/// hold several accounts' debits (settled together on PostgreSQL: `slices::debit_own_many`);
/// how many each took.
async fn race_together(store: &Store, ids: &[i64], n: usize, price: Money) -> Vec<usize> {
    let tasks: Vec<_> = (0..n * ids.len())
        .map(|i| {
            let (store, id) = (store.clone(), ids[i % ids.len()]);
            tokio::spawn(async move {
                let spent = store
                    .write_repeatable(move |c| {
                        billing::debit(c, id, price, "sms", &format!("together-{i}"), NOW)
                    })
                    .await;
                (id, spent)
            })
        })
        .collect();
    let mut taken = vec![0; ids.len()];
    for t in tasks {
        let (id, spent) = t.await.unwrap();
        if let Spend::Done { .. } = spent.unwrap() {
            let at = ids.iter().position(|i| *i == id).unwrap();
            taken[at] += 1;
        }
    }
    taken
}

/// Accounts debited in the same batches keep their own books: far from the floor every
/// debit passes, at the floor each account takes exactly what its balance covers.
async fn accounts_race_to_their_floors_together(store: &Store) {
    migrate::run(store).await.unwrap();
    let credit = Money::from_cents(10_000_000);
    let a = account_tagged(store, BillingMode::Prepaid, credit, "a").await;
    let b = account_tagged(store, BillingMode::Prepaid, credit, "b").await;
    let post = account_tagged(store, BillingMode::Postpaid, Money::ZERO, "p").await;
    let ids = [a, b, post];
    // Each account alone first, so that every holder has a slice of each.
    for id in ids {
        assert_eq!(race(store, id, 200, Money::from_cents(4)).await, 200);
    }
    assert_eq!(
        race_together(store, &ids, 300, Money::from_cents(4)).await,
        [300, 300, 300]
    );
    for (id, left) in [
        (a, 10_000_000 - 2_000),
        (b, 10_000_000 - 2_000),
        (post, -2_000),
    ] {
        let (balance, sum, _, _) = books(store, id).await;
        assert_eq!(balance, Money::from_cents(left));
        assert_eq!(sum, balance, "the balance is the sum of the ledger");
    }
    // 9,998,000.00 covers 490 debits of 20,400.00 each, with 2,000.00 left.
    let taken = race_together(store, &[a, b], 500, Money::from_cents(20_400)).await;
    assert_eq!(taken, [490, 490]);
    for id in [a, b] {
        let (balance, sum, lowest, _) = books(store, id).await;
        assert_eq!(
            balance,
            Money::from_cents(2_000),
            "no credit stranded in a slice"
        );
        assert_eq!(sum, balance, "the balance is the sum of the ledger");
        assert!(lowest.unwrap() >= Money::ZERO, "never below zero");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_accounts_race_to_their_floors_together() {
    let (store, _dir) = common::sqlite().await;
    accounts_race_to_their_floors_together(&store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_accounts_race_to_their_floors_together() {
    let options = StoreOptions {
        connections: 4,
        ..StoreOptions::default()
    };
    let Some((store, schema)) = common::postgres("slicesmany", &options).await else {
        return;
    };
    accounts_race_to_their_floors_together(&store).await;
    drop(store);
    drop(schema);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_debits_race_to_the_floor() {
    let (store, _dir) = common::sqlite().await;
    race_to_the_floor(&store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_holders_race_to_the_floor() {
    let options = StoreOptions {
        connections: 4,
        ..StoreOptions::default()
    };
    let Some((store, schema)) = common::postgres("slices", &options).await else {
        return;
    };
    race_to_the_floor(&store).await;
    drop(store);
    drop(schema);
}
