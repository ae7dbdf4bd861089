//! Migrations carry the data an earlier release left: a database migrated to an earlier
//! version, filled the way that release filled it, then migrated to the end. On SQLite and,
//! with DIALTONE_TEST_DATABASE_URL, on PostgreSQL (in a schema of its own).

#![allow(
    clippy::unwrap_used,
    clippy::too_many_lines,
    reason = "tests: a failed unwrap is a failed test, and a scenario reads best whole"
)]

use dialtone_domain::{Sid, Timestamp};
mod common;

use std::sync::Arc;

use dialtone_store::key_cache::{self, KeyCache};
use dialtone_store::{DbError, Store, StoreOptions, events, migrate, params, sms};

/// A migration test on SQLite and on PostgreSQL (in a schema of its own named after
/// `$schema`).
macro_rules! both {
    ($name:ident, $schema:literal) => {
        mod $name {
            use super::*;

            #[tokio::test]
            async fn sqlite() {
                let (store, _dir) = common::sqlite().await;
                super::$name(&store).await;
            }

            #[tokio::test]
            async fn postgres() {
                let Some((store, _schema)) =
                    common::postgres($schema, &StoreOptions::default()).await
                else {
                    return;
                };
                super::$name(&store).await;
                drop(store);
            }
        }
    };
}

/// Inserts the account `acct0001` with `credit` as an earlier release's schema holds it;
/// gives its id.
fn account(c: &mut dyn dialtone_store::Conn, credit: i64) -> Result<i64, DbError> {
    c.query_one(
        "INSERT INTO accounts (sid, name, status, currency, billing_mode, credit, login, password_hash, created, updated) \
         VALUES ('acct0001', 'a', 'active', 'EUR', 'prepaid', $1, 'a', 'x', 0, 0) RETURNING id",
        params![credit],
    )?
    .int(0)
}

/// Inserts a second account, `acct0002`, as [`account`] does; gives its id.
fn second_account(c: &mut dyn dialtone_store::Conn) -> Result<i64, DbError> {
    c.query_one(
        "INSERT INTO accounts (sid, name, status, currency, billing_mode, credit, login, password_hash, created, updated) \
         VALUES ('acct0002', 'b', 'active', 'EUR', 'prepaid', 0, 'b', 'x', 0, 0) RETURNING id",
        params![],
    )?
    .int(0)
}

/// The SMS history moved into the SMS row (migration 15): each SMS keeps its moves, in
/// order, and an SMS without moves has none.
async fn sms_history_moves_into_the_sms(store: &Store) {
    migrate::run_to(store, 14).await.expect("migrate to 14");
    let account = store
        .write(|c| {
            let account = account(c, 0)?;
            let mut ids = Vec::new();
            for sid in ["sms00001", "sms00002", "sms00003"] {
                c.execute(
                    "INSERT INTO sms (sid, account_id, direction, sender, recipient, body, encoding, parts, status, carrier, created, updated) \
                     VALUES ($1, $2, 'outbound', 'SMS', '+447700900555', 'hi', 'gsm', 1, 'created', 'simulated', 0, 0)",
                    params![sid, account],
                )?;
                ids.push(
                    c.query_one("SELECT id FROM sms WHERE sid = $1", params![sid])?
                        .int(0)?,
                );
            }
            // Interleaved, as moves of several SMS are written.
            for (sms, old, new, at) in [
                (0, "created", "pending", 100),
                (1, "created", "pending", 150),
                (0, "pending", "sent", 300),
                (1, "pending", "error", 350),
                (0, "sent", "remote-queued", 500),
            ] {
                c.execute(
                    "INSERT INTO sms_history (sms_id, old_status, new_status, at) VALUES ($1, $2, $3, $4)",
                    params![ids[sms], old, new, at],
                )?;
            }
            Ok::<_, DbError>(account)
        })
        .await
        .expect("fill as release 14 did");
    assert_eq!(migrate::run_to(store, 15).await.expect("migrate"), vec![15]);
    // Read with today's columns: the later migrations add to the SMS, change none of this.
    migrate::run(store).await.expect("the later migrations");

    let histories = store
        .read(move |c| {
            ["sms00001", "sms00002", "sms00003"]
                .iter()
                .map(|sid| {
                    let sid = Sid::parse(sid).expect("a sid");
                    let sms = sms::get(c, account, &sid, Timestamp::from_millis(0))?
                        .expect("the SMS is there");
                    Ok(sms
                        .history
                        .iter()
                        .map(|h| (h.old_status.clone(), h.new_status.clone(), h.at))
                        .collect::<Vec<_>>())
                })
                .collect::<Result<Vec<_>, DbError>>()
        })
        .await
        .expect("read the SMS");
    let moves = |list: &[(&str, &str, i64)]| {
        list.iter()
            .map(|(o, n, at)| {
                (
                    (*o).to_owned(),
                    (*n).to_owned(),
                    Timestamp::from_millis(*at),
                )
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(
        histories,
        vec![
            moves(&[
                ("created", "pending", 100),
                ("pending", "sent", 300),
                ("sent", "remote-queued", 500)
            ]),
            moves(&[("created", "pending", 150), ("pending", "error", 350)]),
            moves(&[]),
        ]
    );
}

both!(sms_history_moves_into_the_sms, "mig");

/// Authentication's version (migration 16): an account and key made before it are served
/// by the key cache, a debit leaves the cached account in place, and a key revoked or an
/// account suspended afterwards is seen by the next lookup (here through raw statements,
/// as another process would make them).
async fn auth_version_guards_the_key_cache(store: &Store) {
    migrate::run_to(store, 15).await.expect("migrate to 15");
    store
        .write(|c| {
            account(c, 1000)?;
            c.execute(
                "INSERT INTO api_keys (account_id, key_id, key_hash, created) \
                 SELECT id, 'dt_00000001', 'hash1', 0 FROM accounts WHERE sid = 'acct0001'",
                params![],
            )
        })
        .await
        .expect("fill as release 15 did");
    assert_eq!(migrate::run_to(store, 16).await.expect("migrate"), vec![16]);
    // The lookups are today's statements, over the tables of every later migration.
    migrate::run(store).await.expect("migrate to the latest");

    let cache = Arc::new(KeyCache::default());
    // As a request looks it up (on PostgreSQL, the version read shared by the lookups
    // asking together).
    let lookup = |cache: Arc<KeyCache>| async move {
        cache
            .account_for_request(store, "hash1".to_owned())
            .await
            .expect("lookup")
    };
    let write = |sql: &'static str| async move {
        store
            .write(move |c| c.execute(sql, params![]))
            .await
            .expect("write")
    };
    let version = || async { store.read(key_cache::version).await.expect("version") };
    let first = lookup(cache.clone()).await.expect("the key's account");
    assert_eq!(
        (first.sid.as_str(), first.credit.units()),
        ("acct0001", 1000)
    );

    // A debit moves neither the version nor the cached account.
    let before = version().await;
    write("UPDATE accounts SET credit = credit - 100 WHERE sid = 'acct0001'").await;
    assert_eq!(version().await, before);
    assert_eq!(lookup(cache.clone()).await, Some(first.clone()));

    // A change of its settings does, and the next lookup reads it.
    write("UPDATE accounts SET status = 'suspended' WHERE sid = 'acct0001'").await;
    assert!(version().await > before);
    let suspended = lookup(cache.clone()).await.expect("the key's account");
    assert_eq!(
        (suspended.status.as_str(), suspended.credit.units()),
        ("suspended", 900)
    );
    // Lookups asking together, after a change: every one sees it.
    write("UPDATE accounts SET status = 'active' WHERE sid = 'acct0001'").await;
    let mut together = tokio::task::JoinSet::new();
    for _ in 0..20 {
        let (cache, store) = (cache.clone(), store.clone());
        together.spawn(async move { cache.account_for_request(&store, "hash1".to_owned()).await });
    }
    while let Some(account) = together.join_next().await {
        let account = account
            .expect("join")
            .expect("lookup")
            .expect("the key's account");
        assert_eq!(account.status.as_str(), "active");
    }

    // A revoked key finds nothing from the next lookup on.
    write("UPDATE api_keys SET revoked = 1 WHERE key_hash = 'hash1'").await;
    assert_eq!(lookup(cache).await, None);
}

both!(auth_version_guards_the_key_cache, "auth");

/// Part ids keyed (migration 17): a padded hexadecimal id loses its zeros (so a decimal
/// receipt finds it), other ids are kept, and a part recorded twice is kept once.
async fn part_ids_are_keyed(store: &Store) {
    migrate::run_to(store, 16).await.expect("migrate to 16");
    store
        .write(|c| {
            let account = account(c, 0)?;
            c.execute(
                "INSERT INTO sms (sid, account_id, direction, sender, recipient, body, encoding, parts, status, carrier, created, updated) \
                 VALUES ('sms00001', $1, 'outbound', 'SMS', '+33612345678', 'hi', 'gsm', 3, 'sent', 'operator', 0, 0)",
                params![account],
            )?;
            let sms = c
                .query_one("SELECT id FROM sms WHERE sid = 'sms00001'", params![])?
                .int(0)?;
            for (id, part) in [("002a010a", 1), ("msg-7", 2), ("0000", 3), ("0000", 3)] {
                c.execute(
                    "INSERT INTO sms_parts (network, message_id, sms_id, part, status, updated) \
                     VALUES ('operator', $1, $2, $3, 'sent', 0)",
                    params![id, sms, part],
                )?;
            }
            Ok::<_, DbError>(())
        })
        .await
        .expect("fill as release 16 did");
    assert_eq!(migrate::run_to(store, 17).await.expect("migrate"), vec![17]);
    let parts = store
        .read(|c| {
            c.query(
                "SELECT part, message_id FROM sms_parts ORDER BY part",
                params![],
            )?
            .iter()
            .map(|r| Ok((r.int(0)?, r.text(1)?)))
            .collect::<Result<Vec<_>, DbError>>()
        })
        .await
        .expect("read");
    assert_eq!(
        parts,
        [
            (1, "2a010a".to_owned()),
            (2, "msg-7".to_owned()),
            (3, "0".to_owned())
        ]
    );
}

both!(part_ids_are_keyed, "keys");

/// The event id loses its index (migration 30): every event keeps its id, event id and
/// data, its deliveries still find it, and on SQLite (whose table is made again) the
/// deliveries' foreign key still guards it.
async fn event_ids_lose_their_index(store: &Store) {
    migrate::run_to(store, 29).await.expect("migrate to 29");
    let ids = store
        .write(|c| {
            let account = account(c, 0)?;
            let mut ids = Vec::new();
            for (n, event_id) in ["9422146236497234056PGNSmlw2sOrjq", "9422146236497234057AbCdEfGhIjKlM"]
                .into_iter()
                .enumerate()
            {
                let id = c
                    .query_one(
                        "INSERT INTO events (event_id, account_id, type, data, created) \
                         VALUES ($1, $2, 'sms.mt.status_update', $3, $4) RETURNING id",
                        params![event_id, account, format!("{{\"n\":{n}}}"), n as i64],
                    )?
                    .int(0)?;
                c.execute(
                    "INSERT INTO deliveries (account_id, event_id, endpoint, status, created, updated) \
                     VALUES ($1, $2, 'http://127.0.0.1:9/hook', 'pending', 0, 0)",
                    params![account, id],
                )?;
                ids.push(id);
            }
            Ok::<_, DbError>(ids)
        })
        .await
        .expect("fill as release 29 did");
    assert_eq!(migrate::run_to(store, 30).await.expect("migrate"), vec![30]);
    let (events, joined, indexes) = store
        .read(|c| {
            let events = c
                .query("SELECT id, event_id, data FROM events ORDER BY id", params![])?
                .iter()
                .map(|r| Ok((r.int(0)?, r.text(1)?, r.text(2)?)))
                .collect::<Result<Vec<_>, DbError>>()?;
            let joined = c
                .query(
                    "SELECT e.event_id FROM deliveries d JOIN events e ON e.id = d.event_id ORDER BY d.id",
                    params![],
                )?
                .iter()
                .map(|r| r.text(0))
                .collect::<Result<Vec<_>, DbError>>()?;
            let indexes = indexes_of(c, "events")?;
            Ok::<_, DbError>((events, joined, indexes))
        })
        .await
        .expect("read");
    assert_eq!(
        events,
        [
            (
                ids[0],
                "9422146236497234056PGNSmlw2sOrjq".to_owned(),
                "{\"n\":0}".to_owned()
            ),
            (
                ids[1],
                "9422146236497234057AbCdEfGhIjKlM".to_owned(),
                "{\"n\":1}".to_owned()
            ),
        ]
    );
    assert_eq!(
        joined,
        [
            "9422146236497234056PGNSmlw2sOrjq",
            "9422146236497234057AbCdEfGhIjKlM"
        ]
    );
    let expected: &[&str] = match store.dialect() {
        dialtone_store::Dialect::Sqlite => &["events_account_recent"],
        dialtone_store::Dialect::Postgres => &["events_account_recent", "events_pkey"],
    };
    assert_eq!(indexes, expected);
    if store.dialect() == dialtone_store::Dialect::Sqlite {
        let orphaning = store
            .write(move |c| c.execute("DELETE FROM events WHERE id = $1", params![ids[0]]))
            .await;
        assert!(orphaning.is_err(), "an event with deliveries was deleted");
    }
}

both!(event_ids_lose_their_index, "eventids");

/// The names of the indexes on `table`, sorted.
fn indexes_of(c: &mut dyn dialtone_store::Conn, table: &str) -> Result<Vec<String>, DbError> {
    match c.dialect() {
        dialtone_store::Dialect::Sqlite => c.query(
            "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = $1 ORDER BY name",
            params![table],
        )?,
        dialtone_store::Dialect::Postgres => c.query(
            "SELECT indexname FROM pg_indexes WHERE tablename = $1 \
             AND schemaname = current_schema() ORDER BY indexname",
            params![table],
        )?,
    }
    .iter()
    .map(|r| r.text(0))
    .collect()
}

/// Events lose their index by account (migration 32); the console's one reader a node
/// reads a range of positions and keeps the accounts it serves, in order, up to its limit.
async fn events_lose_their_account_index(store: &Store) {
    migrate::run_to(store, 31).await.expect("migrate to 31");
    let (first, second) = store
        .write(|c| {
            let second = second_account(c)?;
            Ok::<_, DbError>((account(c, 0)?, second))
        })
        .await
        .expect("accounts");
    let ids = store
        .write(move |c| {
            let mut ids = Vec::new();
            for n in 0..6_i64 {
                let owner = if n % 2 == 0 { first } else { second };
                let id = c
                    .query_one(
                        "INSERT INTO events (event_id, account_id, type, data, created) \
                         VALUES ($1, $2, 'billing.credit', $3, $4) RETURNING id",
                        params![format!("e{n}"), owner, format!("{{\"n\":{n}}}"), n],
                    )?
                    .int(0)?;
                ids.push(id);
            }
            Ok::<_, DbError>(ids)
        })
        .await
        .expect("fill as release 31 did");
    assert_eq!(migrate::run_to(store, 32).await.expect("migrate"), vec![32]);
    let read = ids.clone();
    let (indexes, newest, all, firsts, capped, window) = store
        .read(move |c| {
            let ids = read;
            let ids_of = |found: Vec<events::FeedEvent>| -> Vec<i64> {
                found.iter().map(|e| e.id).collect()
            };
            Ok::<_, DbError>((
                indexes_of(c, "events")?,
                events::newest_position(c)?,
                ids_of(events::among(c, 0, ids[5], &[first, second], 100)?),
                ids_of(events::among(c, 0, ids[5], &[first], 100)?),
                ids_of(events::among(c, 0, ids[5], &[first, second], 2)?),
                ids_of(events::among(c, ids[1], ids[3], &[first, second], 100)?),
            ))
        })
        .await
        .expect("read");
    let expected: &[&str] = match store.dialect() {
        dialtone_store::Dialect::Sqlite => &[],
        dialtone_store::Dialect::Postgres => &["events_pkey"],
    };
    assert_eq!(indexes, expected);
    assert_eq!(newest, ids[5]);
    assert_eq!(all, ids);
    assert_eq!(firsts, [ids[0], ids[2], ids[4]]);
    assert_eq!(capped, ids[4..], "the newest, oldest first");
    assert_eq!(
        window,
        ids[2..4],
        "after the first position, up to the second"
    );
}

both!(events_lose_their_account_index, "eventsaccount");

/// The SMS worker's queue takes each SMS's account (migration 31): every queued SMS keeps
/// its due time and gains its account, and the walk that shares the batch among accounts
/// finds them.
async fn queued_sms_gain_their_account(store: &Store) {
    migrate::run_to(store, 30).await.expect("migrate to 30");
    let (accounts, ids) = store
        .write(|c| {
            let first = account(c, 0)?;
            let second = second_account(c)?;
            let mut ids = Vec::new();
            for (n, owner) in [first, second, first].into_iter().enumerate() {
                let id = c
                    .query_one(
                        "INSERT INTO sms (sid, account_id, direction, sender, recipient, body, encoding, parts, status, carrier, next_at, created, updated) \
                         VALUES ($1, $2, 'outbound', 'SMS', '+447700900555', 'hi', 'gsm', 1, 'created', 'simulated', $3, 0, 0) RETURNING id",
                        params![format!("sms{n}"), owner, n as i64],
                    )?
                    .int(0)?;
                c.execute(
                    "INSERT INTO sms_queue (sms_id, due_at) VALUES ($1, $2)",
                    params![id, n as i64],
                )?;
                ids.push(id);
            }
            Ok::<_, DbError>(([first, second], ids))
        })
        .await
        .expect("fill as release 30 did");
    assert_eq!(migrate::run_to(store, 31).await.expect("migrate"), vec![31]);
    let queue = store
        .read(|c| {
            c.query(
                "SELECT sms_id, account_id, due_at FROM sms_queue ORDER BY sms_id",
                params![],
            )?
            .iter()
            .map(|r| Ok((r.int(0)?, r.int(1)?, r.int(2)?)))
            .collect::<Result<Vec<_>, DbError>>()
        })
        .await
        .expect("read");
    assert_eq!(
        queue,
        [
            (ids[0], accounts[0], 0),
            (ids[1], accounts[1], 1),
            (ids[2], accounts[0], 2)
        ]
    );
    // The walk is today's code, on today's schema (on PostgreSQL the queue became the SMS's
    // state in migration 36): the accounts migration 31 gave stay with their SMS.
    migrate::run(store).await.expect("migrate to the last");
    // A batch of two: one of each account, the first account's soonest.
    let (found, last) = store
        .write(|c| {
            dialtone_store::sms::due(
                c,
                dialtone_domain::Timestamp::from_millis(5),
                2,
                0,
                &std::collections::HashSet::new(),
            )
        })
        .await
        .expect("walk");
    let mut found: Vec<i64> = found.iter().map(|s| s.id).collect();
    found.sort_unstable();
    assert_eq!(found, [ids[0], ids[1]]);
    assert_eq!(last, accounts[1]);
}

both!(queued_sms_gain_their_account, "queueaccounts");

/// The ids of the SMS the worker's walk finds due at `at` (today's code, on today's
/// schema), soonest first.
async fn due(store: &Store, at: i64) -> Vec<i64> {
    store
        .write(move |c| {
            sms::due(
                c,
                Timestamp::from_millis(at),
                10,
                0,
                &std::collections::HashSet::new(),
            )
        })
        .await
        .expect("walk")
        .0
        .iter()
        .map(|s| s.id)
        .collect()
}

/// How many SMS the queue holds.
async fn queued(store: &Store) -> i64 {
    store
        .read(|c| c.query_one("SELECT count(*) FROM sms_queue", params![]))
        .await
        .expect("count")
        .int(0)
        .expect("int")
}

/// Migration 0033: on SQLite the queue table becomes a view of `sms.next_at`; an SMS queued
/// before it is still due after it, a reschedule moves it, and an SMS with no next step is
/// not queued. On PostgreSQL the table stays until migration 36: the same holds through
/// both.
async fn queued_sms_stay_due_when_the_queue_becomes_their_own(store: &Store) {
    migrate::run_to(store, 32).await.expect("migrate to 32");
    let (_, ids) = store
        .write(|c| {
            let owner = account(c, 0)?;
            let mut ids = Vec::new();
            for (n, next_at) in [Some(1i64), Some(2), None].into_iter().enumerate() {
                let id = c
                    .query_one(
                        "INSERT INTO sms (sid, account_id, direction, sender, recipient, body, encoding, parts, status, carrier, next_at, created, updated) \
                         VALUES ($1, $2, 'outbound', 'SMS', '+447700900555', 'hi', 'gsm', 1, 'pending', 'simulated', $3, 0, 0) RETURNING id",
                        params![format!("sms{n}"), owner, next_at],
                    )?
                    .int(0)?;
                if let Some(at) = next_at {
                    c.execute(
                        "INSERT INTO sms_queue (sms_id, account_id, due_at) VALUES ($1, $2, $3)",
                        params![id, owner, at],
                    )?;
                }
                ids.push(id);
            }
            Ok::<_, DbError>((owner, ids))
        })
        .await
        .expect("fill as release 32 did");
    assert_eq!(migrate::run_to(store, 33).await.expect("migrate"), vec![33]);
    // The reads and writes below are today's code, on today's schema (migration 36 on
    // PostgreSQL): what 33 kept of the queue goes on through it.
    migrate::run(store).await.expect("migrate to the last");
    assert_eq!(due(store, 1).await, [ids[0]], "only the first is due at 1");
    assert_eq!(
        due(store, 5).await,
        [ids[0], ids[1]],
        "soonest first; none without a next step"
    );
    let (first, second) = (ids[0], ids[1]);
    store
        .write(move |c| {
            dialtone_store::sms::reschedule(
                c,
                first,
                Some(dialtone_domain::Timestamp::from_millis(9)),
            )?;
            dialtone_store::sms::reschedule(c, second, None)
        })
        .await
        .expect("reschedule");
    assert_eq!(due(store, 5).await, Vec::<i64>::new(), "moved on, and gone");
    assert_eq!(due(store, 9).await, [ids[0]]);
    assert_eq!(queued(store).await, 1);
}

both!(
    queued_sms_stay_due_when_the_queue_becomes_their_own,
    "queueown"
);

/// Migration 0036: on PostgreSQL each SMS splits into its message (`sms_message`) and its
/// moving state (`sms_state`, its queue row too). An SMS stored before it reads the same
/// after it, a queued one is still due and moves, one with no next step is not queued, and
/// SMS stored after it take ids after the earlier ones'. On SQLite nothing changes: the same
/// holds.
async fn sms_split_into_message_and_state(store: &Store) {
    migrate::run_to(store, 35).await.expect("migrate to 35");
    let (owner, ids) = store
        .write(|c| {
            let owner = account(c, 0)?;
            let mut ids = Vec::new();
            for (n, (status, next_at, delivered_at)) in [
                ("sent", Some(7i64), None),
                ("delivered", None, Some(5i64)),
            ]
            .into_iter()
            .enumerate()
            {
                let id = c
                    .query_one(
                        "INSERT INTO sms (sid, account_id, direction, sender, recipient, body, encoding, parts, status, status_error, carrier, message_ids, next_at, created, updated, sent_at, delivered_at, history) \
                         VALUES ($1, $2, 'outbound', 'SMS', '+447700900555', 'hi there', 'gsm', 1, $3, '', 'simulated', 'm-1', $4, 1, 4, 2, $5, $6) RETURNING id",
                        params![
                            format!("sms{n}"),
                            owner,
                            status,
                            next_at,
                            delivered_at,
                            format!("created pending 1\npending sent 2\n{}", if delivered_at.is_some() { "sent delivered 5\n" } else { "" })
                        ],
                    )?
                    .int(0)?;
                // SQLite's queue is already the SMS's `next_at` (migration 33).
                if let (Some(at), dialtone_store::Dialect::Postgres) = (next_at, c.dialect()) {
                    c.execute(
                        "INSERT INTO sms_queue (sms_id, account_id, due_at) VALUES ($1, $2, $3)",
                        params![id, owner, at],
                    )?;
                }
                ids.push(id);
            }
            Ok::<_, DbError>((owner, ids))
        })
        .await
        .expect("fill as release 35 did");
    assert_eq!(migrate::run_to(store, 36).await.expect("migrate"), vec![36]);
    // Read with today's columns: the later migrations add to the SMS, change none of this.
    migrate::run(store).await.expect("the later migrations");
    let read = |id: i64| async move {
        store
            .read(move |c| sms::by_id(c, id, Timestamp::from_millis(0)))
            .await
            .expect("read")
            .expect("still there")
    };
    let first = read(ids[0]).await;
    assert_eq!(
        (first.account_id, first.body.as_str(), first.status.as_str()),
        (owner, "hi there", "sent")
    );
    assert_eq!(
        (
            first.next_at,
            first.updated,
            first.sent_at,
            first.delivered_at
        ),
        (
            Some(Timestamp::from_millis(7)),
            Timestamp::from_millis(4),
            Some(Timestamp::from_millis(2)),
            None
        )
    );
    assert_eq!(first.history.len(), 2, "its moves kept");
    let second = read(ids[1]).await;
    assert_eq!(
        (second.status.as_str(), second.next_at, second.history.len()),
        ("delivered", None, 3)
    );
    assert_eq!(due(store, 6).await, Vec::<i64>::new(), "not due yet");
    assert_eq!(due(store, 7).await, [ids[0]], "queued, and alone");
    // A move: delivered, out of the queue, its line added to the history.
    let id = ids[0];
    store
        .write(move |c| {
            sms::write_states(
                c,
                &[sms::StateWrite {
                    id,
                    account_id: owner,
                    status: "delivered".into(),
                    status_error: String::new(),
                    next_at: None,
                    updated: Timestamp::from_millis(8),
                    sent_at: Some(Timestamp::from_millis(99)),
                    delivered_at: Some(Timestamp::from_millis(8)),
                    history_lines: sms::history_line(
                        "sent",
                        "delivered",
                        Timestamp::from_millis(8),
                    ),
                    message_ids: None,
                }],
            )
        })
        .await
        .expect("move");
    let moved = read(ids[0]).await;
    assert_eq!(
        (
            moved.status.as_str(),
            moved.next_at,
            moved.sent_at,
            moved.history.len()
        ),
        ("delivered", None, Some(Timestamp::from_millis(2)), 3),
        "the first send time kept"
    );
    assert_eq!(due(store, 100).await, Vec::<i64>::new(), "left the queue");
    // An SMS stored now: an id after the earlier ones', queued by its due time.
    let stored = store
        .write(move |c| {
            sms::insert_many(
                c,
                &[(
                    common::outbound_sms(owner, Some(Timestamp::from_millis(50))),
                    Timestamp::from_millis(10),
                )],
            )
        })
        .await
        .expect("insert");
    assert!(stored[0].id > ids[1], "ids go on from the earlier SMS");
    assert_eq!(read(stored[0].id).await.body, stored[0].body);
    assert_eq!(due(store, 60).await, [stored[0].id]);
    assert_eq!(queued(store).await, 1);
}

both!(sms_split_into_message_and_state, "smsstate");
