//! The SMS worker's queue follows every change of an SMS's next due time: new SMS, their
//! moves, a reschedule, SMS deleted before anything referred to them. On both databases.

#![allow(
    clippy::unwrap_used,
    reason = "tests: a failed unwrap is a failed test"
)]

mod common;

use dialtone_domain::{Money, Timestamp};
use dialtone_store::sms::{self, NewSms, StateWrite};
use dialtone_store::{Store, StoreOptions, migrate};

const NOW: Timestamp = Timestamp::from_millis(1_750_000_000_000);

fn new_sms(account_id: i64, next_at: Option<Timestamp>) -> NewSms {
    common::outbound_sms(account_id, next_at)
}

/// The ids of the SMS due at `at`, in due order.
async fn due_at(store: &Store, at: Timestamp) -> Vec<i64> {
    store
        .write(move |c| sms::due(c, at, 100))
        .await
        .unwrap()
        .iter()
        .map(|s| s.id)
        .collect()
}

fn state(id: i64, status: &str, next_at: Option<Timestamp>) -> StateWrite {
    StateWrite {
        id,
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
                        state(ids[1], "delivered", None),
                        state(ids[3], "sent", Some(later.plus_ms(1))),
                    ],
                )?;
                sms::write_states(c, &[state(ids[0], "sent", Some(NOW.plus_ms(1)))])
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
    let read = store
        .read({
            let sid = made[0].sid.clone();
            move |c| sms::get(c, account, &sid)
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
