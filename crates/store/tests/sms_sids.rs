//! A new SMS whose drawn sid is taken is written with another, also in a batch and when two
//! rows of one batch drew the same sid (the clock part of a sid wraps every 7.8 minutes, so
//! a busy platform meets taken sids every day). On both databases.

#![allow(
    clippy::unwrap_used,
    reason = "tests: a failed unwrap is a failed test"
)]

mod common;

use dialtone_domain::{Money, Sid, Timestamp};
use dialtone_store::sms::{self, NewSms};
use dialtone_store::{Store, StoreOptions, migrate};

const NOW: Timestamp = Timestamp::from_millis(1_750_000_000_000);

fn new_sms(account_id: i64) -> NewSms {
    common::outbound_sms(account_id, Some(NOW))
}

async fn taken_sids_are_drawn_again(store: &Store) {
    migrate::run(store).await.unwrap();
    let account = common::prepaid_account(store, "sids", Money::ZERO, Money::ZERO, NOW).await;
    let first = store
        .write(move |c| sms::insert(c, &new_sms(account), NOW))
        .await
        .unwrap();
    let taken = first.sid.clone();
    // Three SMS at once: the draws give the taken sid, then one sid twice, then fresh ones.
    let stored = store
        .write(move |c| {
            let mut draws = vec![taken.clone(), Sid::parse("aaaaaaaa").unwrap()];
            draws.push(Sid::parse("aaaaaaaa").unwrap());
            let mut draws = draws.into_iter();
            let rows: Vec<_> = (0..3).map(|_| (new_sms(account), NOW)).collect();
            sms::insert_many_drawing(c, &rows, &mut || draws.next().unwrap_or_else(Sid::generate))
        })
        .await
        .unwrap();
    assert_eq!(stored.len(), 3);
    let mut sids: Vec<String> = stored.iter().map(|s| s.sid.to_string()).collect();
    assert!(!sids.contains(&first.sid.to_string()), "{sids:?}");
    sids.push(first.sid.to_string());
    sids.sort();
    sids.dedup();
    assert_eq!(sids.len(), 4, "every SMS has a sid of its own: {sids:?}");
    for s in &stored {
        let read = store
            .read({
                let sid = s.sid.clone();
                move |c| sms::get(c, account, &sid, NOW)
            })
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            read.id, s.id,
            "the SMS given back is the one stored under its sid"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_taken_sids_are_drawn_again() {
    let (store, _dir) = common::sqlite().await;
    taken_sids_are_drawn_again(&store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_taken_sids_are_drawn_again() {
    let Some((store, schema)) = common::postgres("sids", &StoreOptions::default()).await else {
        return;
    };
    taken_sids_are_drawn_again(&store).await;
    drop(store);
    drop(schema);
}
