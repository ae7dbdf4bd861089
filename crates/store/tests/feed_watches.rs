//! An outbox writes an event that nobody receives only while a console feed watches its
//! account at the event's time (migration 0037), and a watch is only ever lengthened. On
//! both databases.

#![allow(
    clippy::unwrap_used,
    reason = "tests: a failed unwrap is a failed test"
)]

mod common;

use dialtone_domain::{Money, Timestamp};
use dialtone_store::events::{self, Outbox};
use dialtone_store::{Store, StoreOptions, migrate};

const NOW: Timestamp = Timestamp::from_millis(1_750_000_000_000);
const TYPE: &str = "sms.mt.status_update";

/// The `data` of the account's events, oldest first.
async fn recorded(store: &Store, account: i64) -> Vec<String> {
    store
        .read(move |c| events::list(c, account))
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.data)
        .collect()
}

async fn events_are_written_while_watched(store: &Store) {
    migrate::run(store).await.unwrap();
    let watched = common::prepaid_account(store, "watched", Money::ZERO, Money::ZERO, NOW).await;
    let quiet = common::prepaid_account(store, "quiet", Money::ZERO, Money::ZERO, NOW).await;
    store
        .write(move |c| {
            events::watch(c, watched, NOW.plus_ms(1_000))?;
            // A shorter watch written later (another node's feed) does not shorten it.
            events::watch(c, watched, NOW.plus_ms(500))
        })
        .await
        .unwrap();

    let answers = store
        .write(move |c| {
            let mut outbox = Outbox::default();
            // Not read yet: it may be received, so it would be written.
            let unknown = outbox.records(watched, TYPE, None, NOW);
            outbox.read_hooks_of(c, [watched, quiet], TYPE)?;
            let answers = (
                unknown,
                outbox.records(watched, TYPE, None, NOW.plus_ms(999)),
                outbox.records(watched, TYPE, None, NOW.plus_ms(1_000)),
                outbox.records(quiet, TYPE, None, NOW),
                outbox.records(quiet, TYPE, Some("https://example.org/own"), NOW),
            );
            for (account, data, endpoint, at) in [
                (watched, "watched", None, NOW.plus_ms(999)),
                (watched, "after the watch", None, NOW.plus_ms(1_000)),
                (quiet, "nobody", None, NOW),
                (
                    quiet,
                    "its own webhook",
                    Some("https://example.org/own"),
                    NOW,
                ),
            ] {
                outbox.push(account, TYPE, data.to_owned(), endpoint, None, at);
            }
            outbox.flush(c)?;
            Ok::<_, dialtone_store::DbError>(answers)
        })
        .await
        .unwrap();
    assert_eq!(answers, (true, true, false, false, true));
    assert_eq!(recorded(store, watched).await, ["watched"]);
    assert_eq!(recorded(store, quiet).await, ["its own webhook"]);

    // An outbox that did not read the accounts first reads them as it flushes.
    store
        .write(move |c| {
            let mut outbox = Outbox::default();
            outbox.push(
                watched,
                TYPE,
                "again".to_owned(),
                None,
                None,
                NOW.plus_ms(10),
            );
            outbox.push(quiet, TYPE, "nobody again".to_owned(), None, None, NOW);
            outbox.flush(c)
        })
        .await
        .unwrap();
    assert_eq!(recorded(store, watched).await, ["watched", "again"]);
    assert_eq!(recorded(store, quiet).await, ["its own webhook"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_events_are_written_while_watched() {
    let (store, _dir) = common::sqlite().await;
    events_are_written_while_watched(&store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_events_are_written_while_watched() {
    let Some((store, schema)) = common::postgres("feed_watches", &StoreOptions::default()).await
    else {
        return;
    };
    events_are_written_while_watched(&store).await;
    drop(store);
    drop(schema);
}
