//! The commit of a step against a run that another drive saved first: nothing of the step
//! may stay. A call's audio event and its hangup drive its runs at the same time, and both
//! drives can find a voicemail's audio: the one that loses the version check must not
//! leave a second voicemail behind.

use dialtone_domain::account::BillingMode;
use dialtone_domain::call::{CallDirection, HangupSource, NORMAL_CLEARING};
use dialtone_domain::run::{RunKind, RunStatus};
use dialtone_domain::{Money, Sid, Timestamp};
use dialtone_store::runs::{NewRun, Progress, StartedRun};
use dialtone_store::{DatabaseUrl, Store, StoreOptions, accounts, calls, params, runs};

use super::{CommitError, CommitInput, commit};
use crate::networks::Networks;
use crate::scenarios::pending::{self, Pending};

/// An inbound call that ended with a voicemail's audio posted, and its run waiting for
/// that voicemail: the run's id and the call's.
async fn waiting_voicemail(store: &Store) -> (i64, i64) {
    let now = Timestamp::from_millis(1_000_000);
    store
        .write(move |c| {
            let account = accounts::create(
                c,
                &accounts::NewAccount {
                    name: "stale".into(),
                    parent_id: None,
                    currency: "EUR".into(),
                    billing_mode: BillingMode::Prepaid,
                    credit: Money::ZERO,
                    login: None,
                    password_hash: String::new(),
                    key_hash: "kstale".into(),
                    key_id: "kstale".into(),
                    warning_level: Money::ZERO,
                    shutdown_level: Money::ZERO,
                },
                now,
            )?;
            let call = calls::create(
                c,
                &calls::NewCall {
                    account_id: account.id,
                    direction: CallDirection::Inbound,
                    caller: "+447700900999",
                    callee: "+447700900100",
                    number: Some("+447700900100"),
                    scenario_sid: None,
                    parent_id: None,
                    network: "simulated",
                    callid: None,
                },
                now,
            )?;
            calls::set_audio(c, call.id, &dialtone_media::silence_wav(2_000))?;
            calls::end(c, call.id, NORMAL_CLEARING, HangupSource::Caller, now)?;
            let started = StartedRun {
                new: NewRun {
                    account_id: account.id,
                    scenario_sid: "scenario",
                    scenario_name: "voicemail",
                    script: "",
                    kind: RunKind::InboundCall,
                    call_id: Some(call.id),
                },
                sid: Sid::generate(),
                state: "{}".into(),
                lease: now,
                now,
            };
            let run = runs::insert_started(c, &[started])?
                .pop()
                .flatten()
                .ok_or_else(|| dialtone_store::DbError::Other("no run".into()))?;
            let waits = [Pending::Record {
                fiber: 0,
                started: now.millis(),
                deadline: now.millis() + 60_000,
                transcription: None,
            }];
            let waits = pending::to_json(&waits)
                .map_err(|e| dialtone_store::DbError::Other(e.to_string()))?;
            let progress = Progress {
                status: RunStatus::Running,
                state: run.state.as_deref(),
                variables: &run.variables,
                log: &run.log,
                error: None,
                pending: &waits,
                next_at: None,
            };
            assert!(runs::save(c, run.id, run.version, &progress, now)?);
            Ok::<_, dialtone_store::DbError>((run.id, call.id))
        })
        .await
        .expect("the call and its run")
}

/// Two commits made from the same read of the run: the first stores the voicemail, the
/// second is stale and leaves nothing.
async fn a_stale_step_leaves_nothing_behind(store: Store) {
    dialtone_store::migrate::run(&store)
        .await
        .expect("migrated");
    let (run_id, call_id) = waiting_voicemail(&store).await;
    let run = store
        .read(move |c| runs::by_id(c, run_id))
        .await
        .expect("read")
        .expect("the run");
    let (networks, _events) = Networks::start(&[], None);
    let input = move || CommitInput {
        run: run.clone(),
        step: None,
        answered: false,
        moved: None,
        now: Timestamp::from_millis(1_001_000),
        max_state: 1 << 20,
        networks: networks.clone(),
    };
    let first = input();
    let out = store
        .write_repeatable(move |c| commit(c, &first))
        .await
        .expect("the first drive's step is saved");
    assert!(out.woke, "the voicemail answered its fiber");
    let second = input();
    let stale = store.write_repeatable(move |c| commit(c, &second)).await;
    assert!(
        matches!(stale, Err(CommitError::Stale)),
        "the second drive's step is stale: {:?}",
        stale.map(|o| o.woke)
    );
    let (recordings, audio) = store
        .read(move |c| {
            let callid = calls::by_id(c, call_id)?
                .map(|k| k.callid)
                .unwrap_or_default();
            let n = c
                .query_opt(
                    "SELECT count(*) FROM recordings WHERE callid = $1",
                    params![callid.as_str()],
                )?
                .map_or(Ok(0), |r| r.int(0))?;
            Ok::<_, dialtone_store::DbError>((n, calls::audio(c, call_id)?))
        })
        .await
        .expect("read");
    assert_eq!(recordings, 1, "one voicemail, stored by the first drive");
    assert!(audio.is_none(), "the first drive took the call's audio");
}

#[tokio::test]
async fn a_stale_step_leaves_nothing_behind_on_sqlite() {
    let dir = tempfile::tempdir().expect("temp dir");
    let url = DatabaseUrl::Sqlite(dir.path().join("t.db"));
    let store = Store::open(&url, &StoreOptions::default())
        .await
        .expect("open SQLite");
    a_stale_step_leaves_nothing_behind(store).await;
}

#[tokio::test]
async fn a_stale_step_leaves_nothing_behind_on_postgres() {
    let Some((store, _schema)) =
        dialtone_store::test_schema::postgres_store("driver_stale", &StoreOptions::default()).await
    else {
        return;
    };
    a_stale_step_leaves_nothing_behind(store).await;
}
