//! SMPP against a faulty SMSC (the test SMSC of crates/carrier/tests/smsc, on the smpp34
//! package, told how to misbehave): a slow SMSC, a silent one beside a live one, receipts
//! before their response, padded hexadecimal against decimal ids, a connector removed with
//! SMS waiting, parts refused for now, the simulated network turned off, and the order of an
//! SMS's webhook events. Every wait is bounded.

use std::time::{Duration, Instant};

use crate::smpp::smsc::{self, TestSmsc, WAIT};
use dialtone_carrier::smpp::SmppConfig;
use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::{Backend, TestAccount, TestApp, send};
use crate::receiver::{Receiver, Reply};
use crate::smpp::{connector, fetch, submit, until_status};

/// Runs an async test function against both backends, each with a test SMSC.
macro_rules! with_smsc {
    ($($name:ident),+ $(,)?) => {$(
        mod $name {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() {
                super::$name($crate::helpers::Backend::Sqlite).await;
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres() {
                super::$name($crate::helpers::Backend::Postgres).await;
            }
        }
    )+};
}

with_smsc!(
    slow_smsc_each_id_is_stored_as_its_answer_arrives,
    a_silent_smsc_holds_up_only_its_own_connector,
    receipts_before_their_response_are_kept_then_applied,
    padded_hex_and_decimal_ids_match_both_ways,
    a_removed_connector_leaves_its_sms_waiting,
    only_the_refused_part_is_submitted_again,
    events_of_one_sms_reach_a_subscriber_in_order,
);

/// A server with `connectors`; None (after SKIPPED) on PostgreSQL without a test database.
async fn app_with(backend: Backend, connectors: Vec<SmppConfig>) -> Option<TestApp> {
    let app = TestApp::spawn_with(backend, |c| c.smpp = connectors).await;
    if app.is_none() {
        crate::helpers::skip("set DIALTONE_TEST_DATABASE_URL to run this test on PostgreSQL");
    }
    app
}

async fn bound(app: &TestApp, name: &str) {
    let c = app.state.networks.connector(name).expect("configured");
    assert!(c.wait_bound(WAIT).await, "{name} binds");
}

async fn set(smsc: &mut TestSmsc, settings: Value) {
    let mut cmd = settings;
    cmd["cmd"] = json!("set");
    smsc.send(cmd).await;
    smsc.expect("set").await;
}

async fn status_of(app: &TestApp, acct: &TestAccount, sid: &str) -> String {
    fetch(app, acct, sid).await["status"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

async fn admin_get(app: &TestApp, path: &str) -> Value {
    let (status, v) = send(app.admin(Method::GET, path)).await;
    assert_eq!(status, 200, "{v}");
    v
}

/// Window 1 and 300 ms per answer: the SMS answered first are delivered (their ids stored,
/// their receipts applied) while the others still wait for their answer, not after the
/// slowest of the batch; no receipt is left unmatched.
async fn slow_smsc_each_id_is_stored_as_its_answer_arrives(backend: Backend) {
    let Some(mut smsc) = TestSmsc::start("slow_smsc").await else {
        return;
    };
    set(&mut smsc, json!({"delay_ms": 300})).await;
    let mut c = connector(smsc.port);
    c.window = 1;
    let Some(app) = app_with(backend, vec![c]).await else {
        return;
    };
    bound(&app, "operator").await;
    let acct = app.account().await;
    let mut sids = Vec::new();
    for i in 0..8 {
        sids.push(submit(&app, &acct, "+33600000000", &format!("slow {i}")).await);
    }
    app.tick_detached().await;
    let deadline = Instant::now() + WAIT;
    let (delivered, pending) = loop {
        let mut statuses = Vec::new();
        for sid in &sids {
            statuses.push(status_of(&app, &acct, sid).await);
        }
        let delivered = statuses.iter().filter(|s| *s == "delivered").count();
        let pending = statuses.iter().filter(|s| *s == "pending").count();
        if delivered > 0 {
            break (delivered, pending);
        }
        assert!(Instant::now() < deadline, "none delivered: {statuses:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert!(
        pending > 0,
        "{delivered} delivered while the others still wait for their answers"
    );
    for sid in &sids {
        until_status(&app, &acct, sid, "delivered").await;
    }
    let list = admin_get(&app, "/admin/smpp").await;
    assert_eq!(list[0]["unmatchedReceipts"], 0, "{list}");
}

/// One connector's SMSC goes silent (its process frozen): the worker's tick returns at once,
/// SMS to another connector are delivered, the simulated network keeps its pace; only the
/// silent connector's SMS wait.
async fn a_silent_smsc_holds_up_only_its_own_connector(backend: Backend) {
    let Some(silent) = TestSmsc::start("silent_smsc").await else {
        return;
    };
    let Some(_live) = TestSmsc::start("live_smsc").await else {
        return;
    };
    let mut a = connector(silent.port);
    a.name = "silent".into();
    a.prefixes = vec!["+33".into()];
    a.response_timeout_ms = 8_000;
    let mut b = connector(_live.port);
    b.name = "live".into();
    b.prefixes = vec!["+34".into()];
    let Some(app) = app_with(backend, vec![a, b]).await else {
        return;
    };
    bound(&app, "silent").await;
    bound(&app, "live").await;
    silent.freeze(true);
    let acct = app.account().await;
    let mut stuck = Vec::new();
    let mut live = Vec::new();
    let mut simulated = Vec::new();
    for i in 0..3 {
        stuck.push(submit(&app, &acct, "+33600000000", &format!("silent {i}")).await);
        live.push(submit(&app, &acct, "+34600000000", &format!("live {i}")).await);
        simulated.push(submit(&app, &acct, "+447700900123", &format!("sim {i}")).await);
    }
    let started = Instant::now();
    for step in 0..4 {
        let tick = Instant::now();
        app.tick_detached().await;
        assert!(
            tick.elapsed() < Duration::from_secs(1),
            "tick {step} waited {:?} for an SMSC",
            tick.elapsed()
        );
        app.clock.advance_ms(200);
    }
    for sid in &simulated {
        assert_eq!(status_of(&app, &acct, sid).await, "delivered");
    }
    for sid in &live {
        until_status(&app, &acct, sid, "delivered").await;
    }
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "the live connector's SMS took {:?}",
        started.elapsed()
    );
    for sid in &stuck {
        assert_eq!(status_of(&app, &acct, sid).await, "pending");
    }
    let list = admin_get(&app, "/admin/smpp").await;
    let silent_view = list
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "silent")
        .unwrap();
    assert_eq!(silent_view["waiting"], 3, "{silent_view}");
    silent.freeze(false);
}

/// The SMSC sends each receipt before the submit_sm_resp: the receipt is stored, answered,
/// and applied once the part's id is stored. A receipt no SMS has stays kept and visible.
async fn receipts_before_their_response_are_kept_then_applied(backend: Backend) {
    let Some(mut smsc) = TestSmsc::start("receipt_first").await else {
        return;
    };
    set(&mut smsc, json!({"receipt_first": true})).await;
    let Some(app) = app_with(backend, vec![connector(smsc.port)]).await else {
        return;
    };
    bound(&app, "operator").await;
    let acct = app.account().await;
    // Its events are recorded while a console feed watches (nobody subscribes).
    app.watch_feed(&acct.sid).await;
    let sid = submit(&app, &acct, "+33600000000", "receipt first").await;
    app.tick().await;
    for _ in 0..2 {
        assert_eq!(
            smsc.expect("receipt").await["status"],
            0,
            "stored, then answered"
        );
    }
    until_status(&app, &acct, &sid, "delivered").await;
    let statuses: Vec<String> = app
        .events(&acct.sid, "sms.mt.status_update")
        .await
        .iter()
        .map(|e| e["status"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(statuses, ["PENDING", "SENT", "REMOTE_QUEUED", "DELIVERED"]);
    assert_eq!(admin_get(&app, "/admin/smpp/receipts").await, json!([]));

    // A receipt for a message nobody sent: kept, however long, and shown.
    smsc.send(json!({"cmd": "receipt", "id": "77777", "stat": "DELIVRD"}))
        .await;
    assert_eq!(smsc.expect("receipt").await["status"], 0);
    for _ in 0..3 {
        app.clock.advance_ms(3_600_000);
        app.tick().await;
    }
    let kept = admin_get(&app, "/admin/smpp/receipts?connector=operator").await;
    assert_eq!(kept.as_array().map(Vec::len), Some(1), "{kept}");
    assert_eq!(kept[0]["messageId"], "77777");
    assert_eq!(kept[0]["status"], "delivered");
    assert!(kept[0]["tries"].as_i64().unwrap() >= 3, "{kept}");
    let list = admin_get(&app, "/admin/smpp").await;
    assert_eq!(list[0]["unmatchedReceipts"], 1, "{list}");
}

/// `002A...` in the response and decimal in the receipt, and the reverse.
async fn padded_hex_and_decimal_ids_match_both_ways(backend: Backend) {
    let Some(mut smsc) = TestSmsc::start("hex_and_decimal").await else {
        return;
    };
    let Some(app) = app_with(backend, vec![connector(smsc.port)]).await else {
        return;
    };
    bound(&app, "operator").await;
    let acct = app.account().await;
    for mode in ["hex-resp", "hex-receipt"] {
        set(&mut smsc, json!({"ids": mode})).await;
        let sid = submit(&app, &acct, "+33600000000", mode).await;
        app.tick().await;
        let accepted = smsc.expect("accepted").await;
        let receipt = smsc.expect("receipt").await;
        let (resp_id, receipt_id) = (
            accepted["id"].as_str().unwrap().to_owned(),
            receipt["id"].as_str().unwrap().to_owned(),
        );
        let padded = if mode == "hex-resp" {
            &resp_id
        } else {
            &receipt_id
        };
        assert!(
            padded.len() == 8 && padded.starts_with('0'),
            "{mode}: {resp_id} / {receipt_id}"
        );
        assert_ne!(resp_id, receipt_id);
        until_status(&app, &acct, &sid, "delivered").await;
    }
    let list = admin_get(&app, "/admin/smpp").await;
    assert_eq!(list[0]["unmatchedReceipts"], 0, "{list}");
}

/// A connector removed while its SMS wait: they stay pending, shown as waiting, never
/// delivered by the simulated network; a connector added for their destinations takes them.
/// Removed with `waiting=fail`, they end in `error`, refunded.
async fn a_removed_connector_leaves_its_sms_waiting(backend: Backend) {
    let Some(_smsc) = TestSmsc::start("removed_connector").await else {
        return;
    };
    let Some(app) = app_with(backend, Vec::new()).await else {
        return;
    };
    let acct = app.account().await;
    // A connector whose SMSC is not there: its SMS wait for it.
    let add = |name: &str, port: u16, prefix: &str| {
        let mut c = connector(port);
        c.name = name.into();
        c.prefixes = vec![prefix.into()];
        serde_json::to_value(c).unwrap()
    };
    let dead = smsc::free_port();
    let (status, _) = send(
        app.admin(Method::POST, "/admin/smpp")
            .json(&add("doomed", dead, "+33")),
    )
    .await;
    assert_eq!(status, 201);
    let waiting: Vec<String> = [
        submit(&app, &acct, "+33600000000", "one").await,
        submit(&app, &acct, "+33600000000", "two").await,
    ]
    .into();
    app.tick().await;
    for sid in &waiting {
        assert_eq!(status_of(&app, &acct, sid).await, "pending");
    }
    let list = admin_get(&app, "/admin/smpp").await;
    let bind = &list[0]["binds"][0];
    assert_eq!(bind["bound"], false, "{list}");
    assert!(
        bind["lastError"].as_str().unwrap_or("").contains("connect"),
        "{list}"
    );
    assert!(bind["nextAttemptAt"].is_string(), "{list}");

    let (status, _) = send(app.admin(Method::DELETE, "/admin/smpp/doomed")).await;
    assert_eq!(status, 204);
    for _ in 0..3 {
        app.clock.advance_ms(60_000);
        app.tick().await;
    }
    for sid in &waiting {
        assert_eq!(
            status_of(&app, &acct, sid).await,
            "pending",
            "not handed to the simulated network"
        );
    }
    let shown = admin_get(&app, "/admin/smpp/waiting").await;
    assert_eq!(
        shown,
        json!([{"network": "doomed", "running": false, "sms": 2,
                "oldest": "2025-06-01T12:00:00.000Z"}])
    );
    let (status, refused) = send(
        app.admin(Method::POST, "/admin/smpp/waiting/fail")
            .json(&json!({"network": "simulated"})),
    )
    .await;
    assert_eq!(status, 400, "the simulated network runs: {refused}");

    // A connector for their destinations takes them.
    let (status, _) = send(
        app.admin(Method::POST, "/admin/smpp")
            .json(&add("rescue", _smsc.port, "+33")),
    )
    .await;
    assert_eq!(status, 201);
    bound(&app, "rescue").await;
    app.clock.advance_ms(10_000);
    app.tick().await;
    for sid in &waiting {
        until_status(&app, &acct, sid, "delivered").await;
    }

    // Removed with waiting=fail: their SMS end now, refunded.
    let (status, _) = send(
        app.admin(Method::POST, "/admin/smpp")
            .json(&add("doomed2", dead, "+34")),
    )
    .await;
    assert_eq!(status, 201);
    let (_, before) = send(app.req(&acct, Method::GET, "/v2.0/billing/credit")).await;
    let sid = submit(&app, &acct, "+34600000000", "fails").await;
    app.tick().await;
    assert_eq!(status_of(&app, &acct, &sid).await, "pending");
    let (status, _) = send(app.admin(Method::DELETE, "/admin/smpp/doomed2?waiting=fail")).await;
    assert_eq!(status, 204);
    let sms = fetch(&app, &acct, &sid).await;
    assert_eq!(sms["status"], "error", "{sms}");
    assert!(
        sms["statusError"].as_str().unwrap().contains("doomed2"),
        "{sms}"
    );
    let (_, after) = send(app.req(&acct, Method::GET, "/v2.0/billing/credit")).await;
    assert_eq!(before["credit"], after["credit"], "refunded");
    let (status, _) = send(app.admin(Method::DELETE, "/admin/smpp/rescue?waiting=maybe")).await;
    assert_eq!(status, 400);
}

/// Part 2 of a two-part SMS throttled twice: only part 2 goes again, with the same
/// reference, and the connector slows down. Part 2 refused for now past the connector's
/// tries: the SMS waits, and its next submission carries part 2 alone.
async fn only_the_refused_part_is_submitted_again(backend: Backend) {
    let Some(mut smsc) = TestSmsc::start("partial_refusal").await else {
        return;
    };
    let Some(app) = app_with(backend, vec![connector(smsc.port)]).await else {
        return;
    };
    bound(&app, "operator").await;
    let acct = app.account().await;
    let long = "Two parts, the second refused for now. ".repeat(5);
    let parts_seen = async |smsc: &mut TestSmsc, n: usize| {
        let mut seen = Vec::new();
        for _ in 0..n {
            let s = smsc.expect("submit").await;
            let sm = s["sm"].as_str().unwrap().to_owned();
            // UDH 05 00 03 ref total seq.
            seen.push((sm[6..8].to_owned(), sm[10..12].to_owned()));
        }
        seen
    };

    set(
        &mut smsc,
        json!({"refuse_seq": 2, "refuse_times": 2, "refuse_status": 0x58}),
    )
    .await;
    let sid = submit(&app, &acct, "+33600000000", &long).await;
    app.tick().await;
    until_status(&app, &acct, &sid, "delivered").await;
    let seen = parts_seen(&mut smsc, 4).await;
    let firsts = seen.iter().filter(|(_, seq)| seq == "01").count();
    let seconds = seen.iter().filter(|(_, seq)| seq == "02").count();
    assert_eq!((firsts, seconds), (1, 3), "{seen:?}");
    assert!(
        seen.iter().all(|(r, _)| *r == seen[0].0),
        "one reference: {seen:?}"
    );
    let list = admin_get(&app, "/admin/smpp").await;
    assert!(
        list[0]["throttleMs"].as_u64().unwrap() > 0,
        "slowed down: {list}"
    );

    // Queue full for part 2, four times: the connector gives up for now, the SMS waits.
    set(
        &mut smsc,
        json!({"refuse_seq": 2, "refuse_times": 4, "refuse_status": 0x14}),
    )
    .await;
    let sid = submit(&app, &acct, "+33600000000", &long).await;
    app.tick().await;
    assert_eq!(status_of(&app, &acct, &sid).await, "pending");
    let mut seen = parts_seen(&mut smsc, 5).await;
    app.clock.advance_ms(10_001);
    app.tick().await;
    until_status(&app, &acct, &sid, "delivered").await;
    seen.extend(parts_seen(&mut smsc, 1).await);
    let firsts = seen.iter().filter(|(_, seq)| seq == "01").count();
    let seconds = seen.iter().filter(|(_, seq)| seq == "02").count();
    assert_eq!(
        (firsts, seconds),
        (1, 5),
        "part 1 once; part 2 four times refused, once taken: {seen:?}"
    );
    assert!(
        seen.iter().all(|(r, _)| *r == seen[0].0),
        "one reference: {seen:?}"
    );
}

/// The status updates of one SMS reach a subscriber in order, each with a later
/// `event_at`: the first failing holds the others back until it is delivered.
async fn events_of_one_sms_reach_a_subscriber_in_order(backend: Backend) {
    let Some(mut smsc) = TestSmsc::start("ordered_events").await else {
        return;
    };
    let Some(app) = app_with(backend, vec![connector(smsc.port)]).await else {
        return;
    };
    bound(&app, "operator").await;
    let acct = app.account().await;
    let receiver = Receiver::start().await;
    receiver.script(&[Reply::Status(500)], None);
    crate::webhooks::subscribe(
        &app,
        &acct,
        "sms.mt.status_update",
        &receiver.url,
        json!({}),
    )
    .await;
    // Simulated: one status per step; SMPP, receipt in TLVs only: sent, remote-queued and
    // delivered in one transaction.
    let sim = submit(&app, &acct, "+447700900123", "simulated").await;
    let smpp = submit(&app, &acct, "+33600000009", "one receipt, two steps").await;
    app.tick().await;
    smsc.expect("receipt").await;
    until_status(&app, &acct, &smpp, "delivered").await;
    for _ in 0..4 {
        app.clock.advance_ms(200);
        app.tick().await;
    }
    assert_eq!(status_of(&app, &acct, &sim).await, "delivered");
    // The first delivery failed; the later ones of its SMS wait for it.
    let got = receiver.received();
    let of = |got: &[crate::receiver::Received], sid: &str| -> Vec<(String, String)> {
        got.iter()
            .filter(|r| r.json["data"]["hash"] == sid.to_ascii_uppercase())
            .map(|r| {
                (
                    r.json["data"]["status"].as_str().unwrap().to_owned(),
                    r.json["event_at"].as_str().unwrap().to_owned(),
                )
            })
            .collect()
    };
    let failed_first: Vec<&str> = got
        .iter()
        .map(|r| r.json["data"]["hash"].as_str().unwrap())
        .collect();
    let held = failed_first[0].to_ascii_lowercase();
    assert_eq!(of(&got, &held).len(), 1, "held back: {:?}", of(&got, &held));
    app.clock.advance_ms(10_000);
    for _ in 0..6 {
        app.tick().await;
    }
    let got = receiver.received();
    for sid in [&sim, &smpp] {
        let events = of(&got, sid);
        // The held SMS's first event came twice (the failed try, then the good one).
        let mut unique = events.clone();
        unique.dedup();
        assert_eq!(
            events.len(),
            unique.len() + usize::from(**sid == held),
            "{events:?}"
        );
        let statuses: Vec<&str> = unique.iter().map(|(s, _)| s.as_str()).collect();
        assert_eq!(
            statuses,
            ["PENDING", "SENT", "REMOTE_QUEUED", "DELIVERED"],
            "{sid}"
        );
        assert!(
            unique.windows(2).all(|w| w[0].1 < w[1].1),
            "each event_at later than the one before: {unique:?}"
        );
    }
}

/// With the simulated network off, only connectors carry SMS: a destination none routes
/// is refused, `/sandbox` is gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_simulated_network_can_be_turned_off() {
    let Some(smsc) = TestSmsc::start("simulated_off").await else {
        return;
    };
    let port = smsc.port;
    let Some(app) = TestApp::spawn_with(Backend::Sqlite, |c| {
        c.smpp = vec![connector(port)];
        c.simulated_network = false;
    })
    .await
    else {
        return;
    };
    bound(&app, "operator").await;
    let acct = app.account().await;
    let (status, refused) = crate::sms::send_sms(
        &app,
        &acct,
        "to=%2B447700900123",
        json!({"body": "nowhere"}),
    )
    .await;
    assert_eq!(status, 400, "{refused}");
    assert!(refused.to_string().contains("no route"), "{refused}");
    let sid = submit(&app, &acct, "+33600000000", "through the connector").await;
    app.tick().await;
    until_status(&app, &acct, &sid, "delivered").await;
    let (status, _) = send(app.req(&acct, Method::GET, "/sandbox/sms")).await;
    assert_eq!(status, 404);
}

/// On PostgreSQL every path that applies a kept receipt locks the SMS before it takes the
/// receipt: the worker's sweep, waiting for an SMS another session holds, holds no receipt
/// meanwhile (it took the receipt first and then waited for the SMS, while the path that
/// records a part held the SMS and waited for the receipt: a deadlock that held up the
/// worker's tick for a second).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sweep_waiting_for_an_sms_holds_no_receipt() {
    let Some(app) = TestApp::spawn(Backend::Postgres).await else {
        crate::helpers::skip("set DIALTONE_TEST_DATABASE_URL to run this test on PostgreSQL");
        return;
    };
    let url = app.postgres_url().expect("a PostgreSQL app");
    let acct = app.account().await;
    let sid = submit(&app, &acct, "+447700900123", "held").await;
    let now = dialtone_domain::Clock::now(&app.clock);
    let account = acct.sid.clone();
    let (sms_id, receipt_id) = app
        .state
        .store
        .write(move |c| {
            let account = dialtone_store::accounts::by_sid(
                c,
                &dialtone_domain::Sid::parse(&account).expect("sid"),
            )?
            .expect("account");
            let sid = dialtone_domain::Sid::parse(&sid).expect("sid");
            let sms = dialtone_store::sms::get(c, account.id, &sid, now)?.expect("sms");
            let key = dialtone_carrier::smpp::receipt::id_key("held-1");
            dialtone_store::sms_parts::insert(c, sms.id, "held", 1, &key, now)?;
            let kept = dialtone_store::smpp_receipts::NewReceipt {
                network: "held",
                message_id: "held-1",
                message_key: &key,
                status: "delivered",
                detail: "DELIVRD",
            };
            let id = dialtone_store::smpp_receipts::keep(c, &kept, now, now)?;
            Ok::<_, dialtone_store::DbError>((sms.id, id))
        })
        .await
        .expect("a part and a receipt kept for it");

    // Another session holds the SMS's state.
    let (locked_tx, locked_rx) = std::sync::mpsc::channel();
    let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
    let u = url.clone();
    let holder = std::thread::spawn(move || {
        let mut c = postgres::Client::connect(&u, postgres::NoTls).expect("connect");
        let mut tx = c.transaction().expect("begin");
        tx.execute(
            "SELECT 1 FROM sms_state WHERE sms_id = $1 FOR UPDATE",
            &[&sms_id],
        )
        .expect("lock the SMS");
        locked_tx.send(()).expect("tell");
        go_rx
            .recv_timeout(Duration::from_secs(60))
            .expect("told to commit");
        tx.commit().expect("commit");
    });
    locked_rx
        .recv_timeout(Duration::from_secs(60))
        .expect("the SMS locked");
    let tick = {
        let app_state = app.state.clone();
        tokio::spawn(async move { dialtone::workers::tick(&app_state).await })
    };
    // Until the sweep waits for the SMS (at most a minute), then the receipt's row must be
    // free: a third session deletes it at once (and rolls back).
    let free = tokio::task::spawn_blocking(move || {
        let mut c = postgres::Client::connect(&url, postgres::NoTls).expect("connect");
        assert!(
            crate::helpers::until_waiting_for_a_lock(&mut c, "%FOR UPDATE OF s%"),
            "the sweep waits for the SMS"
        );
        let mut tx = c.transaction().expect("begin");
        tx.batch_execute("SET LOCAL lock_timeout = '2s'")
            .expect("lock timeout");
        let taken = tx.execute("DELETE FROM smpp_receipts WHERE id = $1", &[&receipt_id]);
        tx.rollback().expect("rollback");
        taken
    })
    .await
    .expect("join");
    go_tx.send(()).expect("go");
    holder.join().expect("the holder");
    tick.await.expect("join").expect("tick");
    assert_eq!(
        free.expect("the receipt's row is not held while the sweep waits for the SMS"),
        1
    );
    let parts_status: String = app
        .state
        .store
        .read(move |c| {
            Ok::<_, dialtone_store::DbError>(
                dialtone_store::sms_parts::get(c, sms_id, 1)?
                    .expect("part")
                    .status,
            )
        })
        .await
        .expect("part");
    assert_eq!(
        parts_status, "delivered",
        "the receipt was applied once the SMS was free"
    );
}
