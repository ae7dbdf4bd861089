//! Steps of many runs saved by one statement (`runs::save_many`): each checked against the
//! version its step was made from, a run given twice saved at most once. On both databases.

#![allow(
    clippy::unwrap_used,
    reason = "tests: a failed unwrap is a failed test"
)]

mod common;

use dialtone_domain::run::{RunKind, RunStatus};
use dialtone_domain::{Money, Sid, Timestamp};
use dialtone_store::runs::{self, NewRun, Progress, StartedRun, StepSave};
use dialtone_store::{Store, StoreOptions, migrate};

const NOW: Timestamp = Timestamp::from_millis(1_750_000_000_000);
const LATER: Timestamp = Timestamp::from_millis(1_750_000_001_000);

fn progress<'a>(status: RunStatus, variables: &'a str) -> Progress<'a> {
    Progress {
        status,
        state: None,
        variables,
        log: "[]",
        error: None,
        pending: "[]",
        next_at: None,
    }
}

async fn steps_are_saved_once_against_their_version(store: &Store) {
    migrate::run(store).await.unwrap();
    let account = common::prepaid_account(store, "saves", Money::ZERO, Money::ZERO, NOW).await;
    let made = store
        .write(move |c| {
            let rows: Vec<StartedRun<'_>> = (0..3)
                .map(|_| StartedRun {
                    new: NewRun {
                        account_id: account,
                        scenario_sid: "abcd1234",
                        scenario_name: "s",
                        script: "branches: {}",
                        kind: RunKind::Api,
                        call_id: None,
                    },
                    sid: Sid::generate(),
                    state: "{}".into(),
                    lease: NOW,
                    now: NOW,
                })
                .collect();
            runs::insert_started(c, &rows)
        })
        .await
        .unwrap();
    let made: Vec<runs::Run> = made.into_iter().map(Option::unwrap).collect();
    let (a, b, c) = (made[0].clone(), made[1].clone(), made[2].clone());
    let saved = store
        .write({
            let (a, b, c) = (a.clone(), b.clone(), c.clone());
            move |conn| {
                let saves = [
                    StepSave {
                        id: a.id,
                        version: a.version,
                        progress: progress(RunStatus::Completed, r#"{"$v":"a"}"#),
                        now: LATER,
                    },
                    // A step made from a version someone else already moved past.
                    StepSave {
                        id: b.id,
                        version: b.version - 1,
                        progress: progress(RunStatus::Completed, r#"{"$v":"b"}"#),
                        now: LATER,
                    },
                    // The same run again in the same statement: refused.
                    StepSave {
                        id: a.id,
                        version: a.version,
                        progress: progress(RunStatus::Failed, r#"{"$v":"a2"}"#),
                        now: LATER,
                    },
                    StepSave {
                        id: c.id,
                        version: c.version,
                        progress: progress(RunStatus::Running, r#"{"$v":"c"}"#),
                        now: LATER,
                    },
                ];
                runs::save_many(conn, &saves)
            }
        })
        .await
        .unwrap();
    assert_eq!(saved, [true, false, false, true]);
    let read = |id: i64| async move {
        store
            .read(move |conn| runs::by_id(conn, id))
            .await
            .unwrap()
            .unwrap()
    };
    let (ra, rb, rc) = (read(a.id).await, read(b.id).await, read(c.id).await);
    assert_eq!(ra.version, a.version + 1);
    assert_eq!(ra.status, RunStatus::Completed);
    assert_eq!(ra.variables, r#"{"$v":"a"}"#);
    assert_eq!(ra.ended, Some(LATER), "a final status ends the run");
    assert_eq!(rb, b, "a stale step changes nothing");
    assert_eq!(rc.version, c.version + 1);
    assert_eq!(rc.status, RunStatus::Running);
    assert_eq!(rc.ended, None);
    // The version a's step was made from is gone now.
    let again = store
        .write(move |conn| {
            runs::save_many(
                conn,
                &[StepSave {
                    id: a.id,
                    version: a.version,
                    progress: progress(RunStatus::Failed, "{}"),
                    now: LATER,
                }],
            )
        })
        .await
        .unwrap();
    assert_eq!(again, [false]);
    assert_eq!(read(a.id).await, ra);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_steps_are_saved_once_against_their_version() {
    let (store, _dir) = common::sqlite().await;
    steps_are_saved_once_against_their_version(&store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_steps_are_saved_once_against_their_version() {
    let Some((store, schema)) = common::postgres("saves", &StoreOptions::default()).await else {
        return;
    };
    steps_are_saved_once_against_their_version(&store).await;
    drop(store);
    drop(schema);
}
