//! The SMS worker's queue follows every change of an SMS's next due time: new SMS, their
//! moves, a reschedule, SMS deleted before anything referred to them. On both databases.

#![allow(
    clippy::unwrap_used,
    reason = "tests: a failed unwrap is a failed test"
)]

mod common;

use std::collections::HashSet;

use dialtone_domain::{Money, Timestamp};
use dialtone_store::sms::{self, NewSms, StateWrite};
use dialtone_store::{Store, StoreOptions, migrate, sms_queue};

const NOW: Timestamp = Timestamp::from_millis(1_750_000_000_000);

fn new_sms(account_id: i64, next_at: Option<Timestamp>) -> NewSms {
    common::outbound_sms(account_id, next_at)
}

/// The ids of the SMS due at `at`, in due order.
async fn due_at(store: &Store, at: Timestamp) -> Vec<i64> {
    store
        .write(move |c| sms::due(c, at, 100, 0, &HashSet::new()))
        .await
        .unwrap()
        .0
        .iter()
        .map(|s| s.id)
        .collect()
}

fn state(id: i64, account_id: i64, status: &str, next_at: Option<Timestamp>) -> StateWrite {
    StateWrite {
        id,
        account_id,
        status: status.into(),
        status_error: String::new(),
        next_at,
        updated: NOW,
        sent_at: None,
        delivered_at: None,
        history_lines: String::new(),
        message_ids: None,
    }
}

async fn the_queue_follows_next_at(store: &Store) {
    migrate::run(store).await.unwrap();
    let account = common::prepaid_account(store, "queue", Money::ZERO, Money::ZERO, NOW).await;
    let later = NOW.plus_ms(5_000);
    let made = store
        .write(move |c| {
            sms::insert_many(
                c,
                &[
                    (new_sms(account, Some(later)), NOW),
                    (new_sms(account, Some(NOW)), NOW),
                    (new_sms(account, None), NOW),
                    (new_sms(account, Some(NOW)), NOW),
                ],
            )
        })
        .await
        .unwrap();
    let ids: Vec<i64> = made.iter().map(|s| s.id).collect();
    assert_eq!(due_at(store, NOW).await, [ids[1], ids[3]]);
    assert_eq!(due_at(store, later).await, [ids[1], ids[3], ids[0]]);
    // Moves: one leaves the queue, one is due later, one given twice takes its last time.
    store
        .write({
            let ids = ids.clone();
            move |c| {
                sms::write_states(
                    c,
                    &[
                        state(ids[1], account, "delivered", None),
                        state(ids[3], account, "sent", Some(later.plus_ms(1))),
                    ],
                )?;
                sms::write_states(c, &[state(ids[0], account, "sent", Some(NOW.plus_ms(1)))])
            }
        })
        .await
        .unwrap();
    assert_eq!(due_at(store, NOW).await, Vec::<i64>::new());
    assert_eq!(due_at(store, NOW.plus_ms(1)).await, [ids[0]]);
    assert_eq!(due_at(store, later.plus_ms(1)).await, [ids[0], ids[3]]);
    // A reschedule in and out, and SMS deleted: none stays behind in the queue.
    store
        .write({
            let ids = ids.clone();
            move |c| {
                sms::reschedule(c, ids[2], Some(NOW))?;
                sms::reschedule(c, ids[0], None)
            }
        })
        .await
        .unwrap();
    assert_eq!(due_at(store, NOW).await, [ids[2]]);
    let owners = store
        .read(|c| {
            c.query(
                "SELECT DISTINCT account_id FROM sms_queue",
                dialtone_store::params![],
            )
        })
        .await
        .unwrap();
    assert_eq!(owners.len(), 1, "every queued SMS is its account's");
    assert_eq!(owners[0].int(0).unwrap(), account);
    let read = store
        .read({
            let sid = made[0].sid.clone();
            move |c| sms::get(c, account, &sid, NOW)
        })
        .await
        .unwrap()
        .unwrap();
    assert_eq!(read.next_at, None, "the SMS keeps its own record");
    store
        .write({
            let ids = ids.clone();
            move |c| sms::delete_new(c, &ids)
        })
        .await
        .unwrap();
    assert_eq!(due_at(store, later.plus_ms(10)).await, Vec::<i64>::new());
    let left = store
        .read(|c| c.query_one("SELECT count(*) FROM sms_queue", dialtone_store::params![]))
        .await
        .unwrap()
        .int(0)
        .unwrap();
    assert_eq!(left, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_the_queue_follows_next_at() {
    let (store, _dir) = common::sqlite().await;
    the_queue_follows_next_at(&store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_the_queue_follows_next_at() {
    let Some((store, schema)) = common::postgres("queue", &StoreOptions::default()).await else {
        return;
    };
    the_queue_follows_next_at(&store).await;
    drop(store);
    drop(schema);
}

/// Stores `count` SMS of the account due at `due`; gives their ids in order.
async fn queued(store: &Store, account: i64, count: usize, due: Timestamp) -> Vec<i64> {
    let rows: Vec<(NewSms, Timestamp)> = (0..count)
        .map(|_| (new_sms(account, Some(due)), NOW))
        .collect();
    store
        .write(move |c| sms::insert_many(c, &rows))
        .await
        .unwrap()
        .iter()
        .map(|s| s.id)
        .collect()
}

/// One walk of the queue at `at`: the SMS claimed, and the account the next walk starts
/// after.
async fn walk(
    store: &Store,
    at: Timestamp,
    limit: usize,
    after: i64,
    skip: &[i64],
) -> (Vec<i64>, i64) {
    let skip: HashSet<i64> = skip.iter().copied().collect();
    let (found, last) = store
        .write(move |c| sms::due(c, at, limit, after, &skip))
        .await
        .unwrap();
    (found.iter().map(|s| s.id).collect(), last)
}

async fn a_backlog_holds_back_its_own_account_only(store: &Store) {
    migrate::run(store).await.unwrap();
    let heavy = common::prepaid_account(store, "heavy", Money::ZERO, Money::ZERO, NOW).await;
    let light = common::prepaid_account(store, "light", Money::ZERO, Money::ZERO, NOW).await;
    let later = common::prepaid_account(store, "later", Money::ZERO, Money::ZERO, NOW).await;
    // The heavy account's 30 SMS were due first; the others' after them.
    let backlog = queued(store, heavy, 30, NOW).await;
    let one = queued(store, light, 1, NOW.plus_ms(5)).await;
    let not_yet = queued(store, later, 1, NOW.plus_ms(60_000)).await;
    let due_later = queued(store, later, 1, NOW.plus_ms(7)).await;
    let at = NOW.plus_ms(10);

    // Strictly by due time, a batch of 10 would be the heavy account's. Shared out: one of
    // each account with due SMS, then the heavy account takes what is left, soonest first.
    let (found, last) = walk(store, at, 10, 0, &[]).await;
    let mut want: Vec<i64> = backlog[..8].to_vec();
    want.extend([one[0], due_later[0]]);
    let mut got = found.clone();
    got.sort_unstable();
    want.sort_unstable();
    assert_eq!(got, want);
    assert_eq!(last, later, "the walk ended on the last account");
    assert!(!found.contains(&not_yet[0]), "not due yet");

    // Room for all: every due SMS, nothing more.
    let (found, _) = walk(store, at, 100, 0, &[]).await;
    assert_eq!(found.len(), 32);
    // SMS already claimed are left out, and their room goes to the others.
    let (found, _) = walk(store, at, 10, 0, &backlog[..5]).await;
    assert!(found.iter().all(|id| !backlog[..5].contains(id)));
    assert!(found.contains(&one[0]) && found.contains(&due_later[0]));
    assert_eq!(found.len(), 10);
    // Nothing due: nothing taken, and the walk still ends on the last account.
    assert_eq!(
        walk(store, NOW.plus_ms(-1), 10, 0, &[]).await,
        (vec![], later)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_a_backlog_holds_back_its_own_account_only() {
    let (store, _dir) = common::sqlite().await;
    a_backlog_holds_back_its_own_account_only(&store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_backlog_holds_back_its_own_account_only() {
    let Some((store, schema)) = common::postgres("queue_fair", &StoreOptions::default()).await
    else {
        return;
    };
    a_backlog_holds_back_its_own_account_only(&store).await;
    drop(store);
    drop(schema);
}

/// More accounts than one walk visits: each walk goes on after the last account the one
/// before visited, round the end to the first, so every account's SMS are reached.
async fn walks_take_the_accounts_in_turn(store: &Store) {
    migrate::run(store).await.unwrap();
    let count = usize::try_from(sms_queue::WALK_ACCOUNTS).unwrap() + 2;
    let mut accounts = Vec::new();
    let mut by_account = std::collections::HashMap::new();
    for i in 0..count {
        let a =
            common::prepaid_account(store, &format!("a{i}"), Money::ZERO, Money::ZERO, NOW).await;
        accounts.push(a);
        by_account.insert(queued(store, a, 1, NOW).await[0], a);
    }
    let accounts_of = |ids: &[i64]| -> Vec<i64> {
        let mut a: Vec<i64> = ids.iter().map(|id| by_account[id]).collect();
        a.sort_unstable();
        a
    };
    let walk_accounts = sms_queue::WALK_ACCOUNTS as usize;
    let (first, last) = walk(store, NOW, 1_000, 0, &[]).await;
    assert_eq!(accounts_of(&first), accounts[..walk_accounts]);
    assert_eq!(last, accounts[walk_accounts - 1]);
    // The next walk: the two left, then round to the first accounts.
    let (second, last) = walk(store, NOW, 1_000, last, &[]).await;
    let mut want = accounts[walk_accounts..].to_vec();
    want.extend(&accounts[..walk_accounts - 2]);
    want.sort_unstable();
    assert_eq!(accounts_of(&second), want);
    assert_eq!(last, accounts[walk_accounts - 3]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_walks_take_the_accounts_in_turn() {
    let (store, _dir) = common::sqlite().await;
    walks_take_the_accounts_in_turn(&store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_walks_take_the_accounts_in_turn() {
    let Some((store, schema)) = common::postgres("queue_turns", &StoreOptions::default()).await
    else {
        return;
    };
    walks_take_the_accounts_in_turn(&store).await;
    drop(store);
    drop(schema);
}
