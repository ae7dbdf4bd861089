//! An SMS planned to its delivery (nobody received its moves as it was stored) becomes a
//! visit of the worker again when a subscription to its moves starts before its delivery,
//! and not when the delivery has already happened (`sms::unplan_deliveries`). On PostgreSQL
//! a subscription made on another node while an intake that planned deliveries of the
//! account without seeing it is still open waits for that intake, and then finds them. On
//! both databases.

#![allow(
    clippy::unwrap_used,
    reason = "tests: a failed unwrap is a failed test"
)]

mod common;

use std::time::{Duration, Instant};

use dialtone_domain::{Money, Timestamp};
use dialtone_store::events::Outbox;
use dialtone_store::sms::{self, NewSms, Sms};
use dialtone_store::{DbError, Store, StoreOptions, migrate, params, webhooks};

const NOW: Timestamp = Timestamp::from_millis(1_750_000_000_000);
const TYPE: &str = "sms.mt.status_update";

/// An SMS of the account taken at `at` by the simulated network and planned to its delivery
/// 600 ms later, as an intake stores one nobody receives the moves of.
fn planned(account: i64, at: Timestamp) -> NewSms {
    NewSms {
        status: "pending",
        plan_sent_at: Some(at.plus_ms(200)),
        plan_queued_at: Some(at.plus_ms(400)),
        plan_delivered_at: Some(at.plus_ms(600)),
        ..common::outbound_sms(account, None)
    }
}

/// Stores `new`, taken at `at`: its id.
async fn store_sms(store: &Store, new: NewSms, at: Timestamp) -> i64 {
    store
        .write(move |c| sms::insert(c, &new, at))
        .await
        .unwrap()
        .id
}

/// The SMS as stored (read as of a time before any of its plans).
async fn stored(store: &Store, id: i64) -> Sms {
    let before = Timestamp::from_millis(0);
    let row = store
        .read(move |c| sms::by_id(c, id, before))
        .await
        .unwrap();
    row.unwrap()
}

/// Subscribes the account to `event_type` at `at`: the subscription's id.
async fn subscribe(store: &Store, account: i64, event_type: &'static str, at: Timestamp) -> i64 {
    store
        .write(move |c| {
            webhooks::create(
                c,
                account,
                event_type,
                "https://example.org/h",
                None,
                "SHA256",
                at,
            )
        })
        .await
        .unwrap()
        .id
}

/// Whether the SMS is a visit of the worker at its planned delivery (its earlier plans kept
/// for that visit), or still planned to its delivery.
fn visited_at_delivery(sms: &Sms, delivery: Timestamp) -> bool {
    match (sms.next_at, sms.plan_delivered_at) {
        (Some(due), None) => {
            assert_eq!(due, delivery);
            assert!(sms.plan_sent_at.is_some(), "{sms:?}");
            true
        }
        (None, Some(at)) => {
            assert_eq!(at, delivery);
            false
        }
        other => panic!("neither planned nor due: {other:?}"),
    }
}

async fn subscriptions_make_deliveries_to_come_visits_again(store: &Store) {
    migrate::run(store).await.unwrap();
    let acct = common::prepaid_account(store, "a", Money::ZERO, Money::ZERO, NOW).await;
    let other = common::prepaid_account(store, "b", Money::ZERO, Money::ZERO, NOW).await;
    let to_come = store_sms(store, planned(acct, NOW), NOW).await;
    let done = store_sms(
        store,
        planned(acct, NOW.plus_ms(-1_000)),
        NOW.plus_ms(-1_000),
    )
    .await;
    let others = store_sms(store, planned(other, NOW), NOW).await;
    // As read once due: delivered, with no write.
    let read = store
        .read(move |c| sms::by_id(c, to_come, NOW.plus_ms(600)))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(read.status, "delivered");
    assert_eq!(read.delivered_at, Some(NOW.plus_ms(600)));
    assert_eq!(read.history.len(), 3, "{:?}", read.history);

    // A subscription to another type changes nothing.
    subscribe(store, acct, "sms.mo", NOW.plus_ms(100)).await;
    assert!(!visited_at_delivery(
        &stored(store, to_come).await,
        NOW.plus_ms(600)
    ));
    // One to the SMS's moves, before its delivery: the worker delivers it, with its events.
    let hook = subscribe(store, acct, TYPE, NOW.plus_ms(100)).await;
    assert!(visited_at_delivery(
        &stored(store, to_come).await,
        NOW.plus_ms(600)
    ));
    // Delivered before the subscription, and another account's: as they were.
    assert!(!visited_at_delivery(
        &stored(store, done).await,
        NOW.plus_ms(-400)
    ));
    assert!(!visited_at_delivery(
        &stored(store, others).await,
        NOW.plus_ms(600)
    ));

    // A subscription enabled again does the same.
    let later = store_sms(store, planned(acct, NOW.plus_ms(200)), NOW.plus_ms(200)).await;
    store
        .write(move |c| webhooks::update(c, hook, Some("disabled"), None, None, NOW.plus_ms(300)))
        .await
        .unwrap();
    assert!(!visited_at_delivery(
        &stored(store, later).await,
        NOW.plus_ms(800)
    ));
    store
        .write(move |c| webhooks::update(c, hook, Some("enabled"), None, None, NOW.plus_ms(300)))
        .await
        .unwrap();
    assert!(visited_at_delivery(
        &stored(store, later).await,
        NOW.plus_ms(800)
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_subscriptions_make_deliveries_to_come_visits_again() {
    let (store, _dir) = common::sqlite().await;
    subscriptions_make_deliveries_to_come_visits_again(&store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_subscriptions_make_deliveries_to_come_visits_again() {
    let Some((store, schema)) = common::postgres("unplan", &StoreOptions::default()).await else {
        return;
    };
    subscriptions_make_deliveries_to_come_visits_again(&store).await;
    drop(store);
    drop(schema);
}

/// Two nodes: the first stores an SMS planned to its delivery, having read that nobody
/// receives the account's moves, and has not committed; the second subscribes the account
/// meanwhile. The subscription waits for the intake's commit (seen waiting in `pg_locks`),
/// and then makes the SMS a visit again: no subscriber misses its delivery.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_subscription_on_another_node_waits_for_an_intake_that_planned() {
    let Some((stores, schema)) =
        dialtone_store::test_schema::postgres_nodes("unplanrace", &StoreOptions::default(), 2)
            .await
    else {
        return;
    };
    let (a, b) = (stores[0].clone(), stores[1].clone());
    migrate::run(&a).await.unwrap();
    let acct = common::prepaid_account(&a, "a", Money::ZERO, Money::ZERO, NOW).await;
    let (locked_tx, locked_rx) = std::sync::mpsc::channel::<()>();
    let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
    let node = a.clone();
    let intake = tokio::spawn(async move {
        node.write(move |c| {
            let owned = sms::intake_reads(c, &[acct], &["+447700900555".into()])?.owned;
            let mut outbox = Outbox::default();
            outbox.read_hooks_of(c, [acct], TYPE)?;
            let received = outbox.delivers(acct, TYPE, None);
            let id = sms::insert(c, &planned(acct, NOW), NOW)?.id;
            locked_tx.send(()).unwrap();
            go_rx.recv().unwrap();
            Ok::<_, DbError>((owned.len(), received, id))
        })
        .await
    });
    tokio::task::spawn_blocking(move || locked_rx.recv())
        .await
        .unwrap()
        .unwrap();
    let subscription = tokio::spawn({
        let b = b.clone();
        async move { subscribe(&b, acct, TYPE, NOW.plus_ms(100)).await }
    });
    let t0 = Instant::now();
    loop {
        let waiting = a
            .read(|c| {
                c.query_one(
                    "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted",
                    params![],
                )
            })
            .await
            .unwrap()
            .int(0)
            .unwrap();
        if waiting > 0 {
            break;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "the subscription never waited for the intake"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert!(!subscription.is_finished());
    go_tx.send(()).unwrap();
    let (owned, received, id) = intake.await.unwrap().unwrap();
    assert_eq!((owned, received), (0, Some(false)));
    subscription.await.unwrap();
    assert!(visited_at_delivery(&stored(&b, id).await, NOW.plus_ms(600)));
    drop((a, b, stores));
    drop(schema);
}
