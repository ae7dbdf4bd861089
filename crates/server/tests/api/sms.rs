//! SMS on v2.0, the simulated network's progression, inbound SMS and the sandbox.

use reqwest::Method;
use serde_json::{Value, json};

use crate::both_backends;
use crate::helpers::{TestAccount, TestApp, assert_error, send};

both_backends!(
    an_sms_progresses_to_delivered_with_events,
    moves_nobody_receives_are_planned_and_read_on_time,
    deliveries_nobody_receives_are_planned_and_never_visited,
    a_search_by_updated_sorts_planned_moves_as_reads_show_them,
    magic_destinations_pick_their_fate,
    bad_sends_are_refused_and_change_nothing,
    senders_need_approval_or_ownership,
    sends_need_credit,
    search_filters_and_required_parameters,
    inbound_sms_from_the_sandbox,
    sms_to_a_platform_number_arrives_inbound,
    an_sms_nobody_watches_to_a_platform_number_still_arrives_inbound,
    multipart_and_unicode_are_billed_per_part,
    one_accounts_backlog_does_not_hold_back_anothers_sms,
    accounts_sharing_groups_and_ticks_keep_their_own_modes_hooks_and_ledgers,
    events_nobody_receives_are_written_only_while_a_feed_watches,
    the_simulated_network_takes_an_sms_in_the_write_that_stores_it,
    sends_at_once_short_of_credit_take_what_it_covers,
);

pub(crate) async fn send_sms(
    app: &TestApp,
    acct: &TestAccount,
    query: &str,
    body: Value,
) -> (reqwest::StatusCode, Value) {
    send(
        app.req(acct, Method::POST, &format!("/v2.0/sms?{query}"))
            .json(&body),
    )
    .await
}

async fn credit(app: &TestApp, acct: &TestAccount) -> String {
    let (_, c) = send(app.req(acct, Method::GET, "/v2.0/billing/credit")).await;
    c["amount"].as_str().unwrap().to_owned()
}

async fn fetch(app: &TestApp, acct: &TestAccount, sid: &str) -> Value {
    let (status, sms) = send(app.req(acct, Method::GET, &format!("/v2.0/sms/{sid}"))).await;
    assert_eq!(status, 200, "{sms}");
    sms
}

/// Moves the clock one step at a time and runs the workers, until nothing is due for `steps`.
async fn run_steps(app: &TestApp, steps: usize) {
    for _ in 0..steps {
        app.tick().await;
        app.clock.advance_ms(200);
    }
    app.tick().await;
}

pub(crate) async fn buy(app: &TestApp, acct: &TestAccount, query: &str) -> String {
    let (_, r) = send(app.req(acct, Method::POST, &format!("/v2.0/numbers/store?{query}"))).await;
    let (status, bought) = send(app.req(
        acct,
        Method::POST,
        &format!("/v2.0/numbers/store/{}", r["token"].as_str().unwrap()),
    ))
    .await;
    assert_eq!(status, 200, "{bought}");
    bought["numbers"][0]["e164"].as_str().unwrap().to_owned()
}

/// An SMS whose moves nobody receives is stored with its `sent` and `remote-queued` planned
/// (the simulated network's timetable is known as it takes the SMS): every read shows them
/// at their times, with no worker between, and the worker writes them with the last move,
/// at their planned times. A subscription made meanwhile receives them then, in order.
/// An SMS whose moves are received is moved by the worker, each move when due.
async fn moves_nobody_receives_are_planned_and_read_on_time(app: TestApp) {
    let acct = app.account().await;
    let (status, sms) = send_sms(&app, &acct, "to=%2B33612345678", json!({"body": "Hi"})).await;
    assert_eq!(status, 202, "{sms}");
    let sid = sms["sid"].as_str().unwrap().to_owned();
    // The moves as the JSON-RPC interface shows them: (new status, when).
    let history = |sid: String| {
        let (app, acct) = (&app, &acct);
        async move {
            let rpc = crate::jsonrpc::rpc(app, acct, "sms.get", json!([sid])).await;
            let moves = rpc["result"]["status_history"].as_array().unwrap().clone();
            let moves: Vec<(String, String)> = moves
                .iter()
                .map(|h| {
                    let field = |f: &str| h[f].as_str().unwrap().to_owned();
                    (field("new_status"), field("updated_at"))
                })
                .collect();
            (rpc["result"]["status"].as_str().unwrap().to_owned(), moves)
        }
    };
    let listed = |status: &'static str| {
        let (app, acct) = (&app, &acct);
        async move {
            let (code, body) = send(app.req(
                acct,
                Method::GET,
                &format!("/v2.0/sms?direction=outbound&createdAfter=2025-06-01T00:00:00Z&createdBefore=2025-06-02T00:00:00Z&status={status}"),
            ))
            .await;
            assert_eq!(code, 200, "{body}");
            body["total"].as_i64().unwrap()
        }
    };
    assert_eq!(fetch(&app, &acct, &sid).await["status"], "pending");
    assert_eq!(history(sid.clone()).await.1.len(), 1);
    // No tick: the reads alone show the planned moves once due.
    app.clock.advance_ms(199);
    assert_eq!(fetch(&app, &acct, &sid).await["status"], "pending");
    app.clock.advance_ms(1);
    let s = fetch(&app, &acct, &sid).await;
    assert_eq!(s["status"], "sent");
    assert_eq!(s["sentAt"], "2025-06-01T12:00:00.200Z");
    assert_eq!(s["updated"], "2025-06-01T12:00:00.200Z");
    assert_eq!((listed("sent").await, listed("pending").await), (1, 0));
    // The other interfaces read it so too.
    let (status, moves) = history(sid.clone()).await;
    assert_eq!((status.as_str(), moves.len()), ("SENT", 2));
    // Someone subscribes while the SMS is on its way.
    let hook = "https://example.org/late";
    crate::webhooks::subscribe(&app, &acct, "sms.mt.status_update", hook, json!(null)).await;
    app.clock.advance_ms(200);
    let s = fetch(&app, &acct, &sid).await;
    assert_eq!(s["status"], "remote-queued");
    assert_eq!(listed("remote-queued").await, 1);
    app.clock.advance_ms(200);
    assert_eq!(
        fetch(&app, &acct, &sid).await["status"],
        "remote-queued",
        "the last move is the worker's"
    );
    app.tick().await;
    let s = fetch(&app, &acct, &sid).await;
    assert_eq!(s["status"], "delivered");
    assert_eq!(s["deliveredAt"], "2025-06-01T12:00:00.600Z");
    let (_, moves) = history(sid.clone()).await;
    let want = [
        ("PENDING", "2025-06-01 12:00:00.000"),
        ("SENT", "2025-06-01 12:00:00.200"),
        ("REMOTE_QUEUED", "2025-06-01 12:00:00.400"),
        ("DELIVERED", "2025-06-01 12:00:00.600"),
    ];
    assert_eq!(moves, want.map(|(a, b)| (a.to_owned(), b.to_owned())));
    // The moves made before the subscription were written for it with the last one.
    let events = app.events(&acct.sid, "sms.mt.status_update").await;
    let statuses: Vec<&str> = events
        .iter()
        .map(|e| e["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, ["SENT", "REMOTE_QUEUED", "DELIVERED"]);

    // Received from the start (the subscription): nothing planned, the worker moves it.
    let (_, sms) = send_sms(&app, &acct, "to=%2B33612345678", json!({"body": "Hi"})).await;
    let sid = sms["sid"].as_str().unwrap().to_owned();
    app.clock.advance_ms(200);
    assert_eq!(fetch(&app, &acct, &sid).await["status"], "pending");
    app.tick().await;
    assert_eq!(fetch(&app, &acct, &sid).await["status"], "sent");
}

/// Runs the SMS worker once: how many SMS it moved or handed to a network.
async fn sms_worker(app: &TestApp) -> usize {
    dialtone::workers::tick_kind(&app.state, dialtone::workers::Kind::Sms)
        .await
        .expect("the SMS worker")
}

/// An SMS whose moves nobody receives, to a number nobody here owns, is planned to its
/// delivery as the simulated network takes it: every read shows each move at its time, the
/// worker never visits it and no event is written. A subscription made after the delivery
/// finds nothing to deliver; one made before it: `moves_nobody_receives_are_planned_and_read_on_time`.
async fn deliveries_nobody_receives_are_planned_and_never_visited(app: TestApp) {
    let acct = app.account().await;
    let (status, sms) = send_sms(&app, &acct, "to=%2B33612345678", json!({"body": "Hi"})).await;
    assert_eq!(status, 202, "{sms}");
    let sid = sms["sid"].as_str().unwrap().to_owned();
    app.clock.advance_ms(599);
    assert_eq!(sms_worker(&app).await, 0);
    assert_eq!(fetch(&app, &acct, &sid).await["status"], "remote-queued");
    app.clock.advance_ms(1);
    let s = fetch(&app, &acct, &sid).await;
    assert_eq!(s["status"], "delivered", "{s}");
    assert_eq!(s["deliveredAt"], "2025-06-01T12:00:00.600Z");
    assert_eq!(s["updated"], "2025-06-01T12:00:00.600Z");
    let rpc = crate::jsonrpc::rpc(&app, &acct, "sms.get", json!([sid])).await;
    let moves: Vec<(&str, &str)> = rpc["result"]["status_history"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| {
            (
                h["new_status"].as_str().unwrap(),
                h["updated_at"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        moves,
        [
            ("PENDING", "2025-06-01 12:00:00.000"),
            ("SENT", "2025-06-01 12:00:00.200"),
            ("REMOTE_QUEUED", "2025-06-01 12:00:00.400"),
            ("DELIVERED", "2025-06-01 12:00:00.600"),
        ]
    );
    let (code, page) = send(app.req(
        &acct,
        Method::GET,
        "/v2.0/sms?direction=outbound&createdAfter=2025-06-01T00:00:00Z&createdBefore=2025-06-02T00:00:00Z&status=delivered",
    ))
    .await;
    assert_eq!(
        (code.as_u16(), page["total"].as_i64()),
        (200, Some(1)),
        "{page}"
    );
    app.clock.advance_ms(10_000);
    assert_eq!(sms_worker(&app).await, 0, "never visited");
    // Subscribed after its delivery: nothing is owed.
    crate::webhooks::subscribe(
        &app,
        &acct,
        "sms.mt.status_update",
        "https://example.org/after",
        json!(null),
    )
    .await;
    app.clock.advance_ms(1_000);
    assert_eq!(sms_worker(&app).await, 0);
    assert_eq!(
        app.events(&acct.sid, "sms.mt.status_update").await,
        Vec::<Value>::new()
    );
    assert_eq!(fetch(&app, &acct, &sid).await["status"], "delivered");
}

/// `updated` as reads show it is what a search sorted by it sorts by: an SMS whose planned
/// `sent` is due is later than one taken after it whose `sent` is not.
async fn a_search_by_updated_sorts_planned_moves_as_reads_show_them(app: TestApp) {
    let acct = app.account().await;
    let mut sids = Vec::new();
    for body in ["first", "second"] {
        let (status, sms) = send_sms(&app, &acct, "to=%2B33612345678", json!({"body": body})).await;
        assert_eq!(status, 202, "{sms}");
        sids.push(sms["sid"].as_str().unwrap().to_owned());
        app.clock.advance_ms(100);
    }
    app.clock.advance_ms(50);
    let (status, page) = send(app.req(
        &acct,
        Method::GET,
        "/v2.0/sms?direction=outbound&createdAfter=2025-06-01T00:00:00Z&createdBefore=2025-06-02T00:00:00Z&sort=updated&order=desc",
    ))
    .await;
    assert_eq!(status, 200, "{page}");
    let hits: Vec<(&str, &str, &str)> = page["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| {
            let field = |f: &str| h[f].as_str().unwrap();
            (field("sid"), field("status"), field("updated"))
        })
        .collect();
    assert_eq!(
        hits,
        [
            (sids[0].as_str(), "sent", "2025-06-01T12:00:00.200Z"),
            (sids[1].as_str(), "pending", "2025-06-01T12:00:00.100Z"),
        ]
    );
}

async fn an_sms_progresses_to_delivered_with_events(app: TestApp) {
    let acct = app.account().await;
    // Received, so its events carry the whole SMS object.
    let hook = "https://example.org/sms";
    crate::webhooks::subscribe(&app, &acct, "sms.mt.status_update", hook, json!(null)).await;
    let (status, sms) = send_sms(
        &app,
        &acct,
        "to=%2B33612345678",
        json!({"body": "Hello", "userData": "order-42"}),
    )
    .await;
    assert_eq!(status, 202, "{sms}");
    let sid = sms["sid"].as_str().unwrap().to_owned();
    assert_eq!(sms["status"], "created");
    assert_eq!(sms["direction"], "outbound");
    assert_eq!(
        sms["from"], "+447700900000",
        "the shared sender when the account has no FR number"
    );
    assert_eq!(sms["encoding"], "gsm");
    assert_eq!(sms["parts"], 1);
    assert_eq!(sms["trafficType"], "marketing");
    assert_eq!(sms["billingDebit"], "5.50");
    assert_eq!(sms["userData"], "order-42");
    assert_eq!(sms["created"], "2025-06-01T12:00:00.000Z");
    assert_eq!(credit(&app, &acct).await, "99994.50");
    let mut seen = Vec::new();
    for want in ["pending", "sent", "remote-queued", "delivered"] {
        app.tick().await;
        let s = fetch(&app, &acct, &sid).await;
        assert_eq!(s["status"], want);
        seen.push(s);
        app.clock.advance_ms(200);
    }
    assert_eq!(app.tick().await, 0, "nothing more to do");
    let last = seen.last().unwrap();
    assert_eq!(last["sentAt"], "2025-06-01T12:00:00.200Z");
    assert_eq!(last["deliveredAt"], "2025-06-01T12:00:00.600Z");
    let events = app.events(&acct.sid, "sms.mt.status_update").await;
    let statuses: Vec<&str> = events
        .iter()
        .map(|e| e["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, ["PENDING", "SENT", "REMOTE_QUEUED", "DELIVERED"]);
    let last = events.last().unwrap();
    assert_eq!(last["hash"], sid.to_uppercase());
    assert_eq!(last["type"], "OUT");
    assert_eq!(last["b_customer_debit"], "5.50");
    assert_eq!(last["b_customer_mode"], "PREPAID");
    assert_eq!(last["user_data"], "order-42");
    assert_eq!(last["date_sent"], "2025-06-01 12:00:00");
    let history: Vec<(String, String)> = last["status_history"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| {
            (
                h["old_status"].as_str().unwrap().to_owned(),
                h["new_status"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        history,
        [
            ("CREATED", "PENDING"),
            ("PENDING", "SENT"),
            ("SENT", "REMOTE_QUEUED"),
            ("REMOTE_QUEUED", "DELIVERED")
        ]
        .map(|(a, b)| (a.to_owned(), b.to_owned()))
    );
    assert_eq!(
        last["status_history"][3]["updated_at"],
        "2025-06-01 12:00:00.600"
    );
    // The sandbox shows what left the platform.
    let (_, left) = send(app.req(&acct, Method::GET, "/sandbox/sms")).await;
    assert_eq!(left.as_array().unwrap().len(), 1, "{left}");
    assert_eq!(left[0]["to"], "+33612345678");
}

async fn magic_destinations_pick_their_fate(app: TestApp) {
    let acct = app.account().await;
    let mut sids = Vec::new();
    for digits in ["001", "002", "003", "004", "005", "999"] {
        let (status, sms) = send_sms(
            &app,
            &acct,
            &format!("to=%2B447700900{digits}"),
            json!({"body": "x"}),
        )
        .await;
        assert_eq!(status, 202, "{sms}");
        sids.push(sms["sid"].as_str().unwrap().to_owned());
    }
    assert_eq!(credit(&app, &acct).await, "99973.00", "6 x 4.50");
    run_steps(&app, 6).await;
    let mut got = Vec::new();
    for sid in &sids {
        got.push(
            fetch(&app, &acct, sid).await["status"]
                .as_str()
                .unwrap()
                .to_owned(),
        );
    }
    assert_eq!(
        got,
        [
            "failed",
            "expired",
            "error",
            "remote-queued",
            "remote-queued",
            "delivered"
        ]
    );
    let error = fetch(&app, &acct, &sids[2]).await;
    assert!(!error["statusError"].as_str().unwrap().is_empty());
    assert_eq!(
        credit(&app, &acct).await,
        "99977.50",
        "the error SMS was refunded"
    );
    // 005 delivers 30 s after submission; 004 never moves.
    app.clock.advance_ms(28_000);
    app.tick().await;
    assert_eq!(
        fetch(&app, &acct, &sids[4]).await["status"],
        "remote-queued"
    );
    app.clock.advance_ms(1_000);
    app.tick().await;
    assert_eq!(fetch(&app, &acct, &sids[4]).await["status"], "delivered");
    app.clock.advance_ms(3_600_000);
    app.tick().await;
    assert_eq!(
        fetch(&app, &acct, &sids[3]).await["status"],
        "remote-queued"
    );
}

async fn bad_sends_are_refused_and_change_nothing(app: TestApp) {
    let acct = app.account().await;
    let ok = json!({"body": "hi"});
    let cases: Vec<(&str, Value, &str)> = vec![
        ("", ok.clone(), "to"),
        ("to=0612345678", ok.clone(), "to"),
        ("to=%2B999123456789", ok.clone(), "to"),
        ("to=%2B33612345678&from=bad!", ok.clone(), "from"),
        ("to=%2B33612345678&from=123456", ok.clone(), "from"),
        ("to=%2B33612345678&from=TwelveLetter", ok.clone(), "from"),
        ("to=%2B33612345678&encoding=utf8", ok.clone(), "encoding"),
        (
            "to=%2B33612345678&trafficType=spam",
            ok.clone(),
            "trafficType",
        ),
        (
            "to=%2B33612345678&encoding=gsm",
            json!({"body": "Привет"}),
            "encoding",
        ),
        ("to=%2B33612345678", json!({"body": ""}), "body"),
        ("to=%2B33612345678", json!({}), "body"),
        (
            "to=%2B33612345678",
            json!({"body": "x", "colour": 1}),
            "colour",
        ),
        (
            "to=%2B33612345678",
            json!({"body": "x", "userData": "u".repeat(256)}),
            "userData",
        ),
        (
            "to=%2B33612345678",
            json!({"body": "x", "webhook": {"endpoint": "ftp://x"}}),
            "webhook.endpoint",
        ),
        (
            "to=%2B33612345678",
            json!({"body": "x", "webhook": {"endpoint": "/relative"}}),
            "webhook.endpoint",
        ),
        (
            "to=%2B33612345678",
            json!({"body": "x", "flash": "yes"}),
            "flash",
        ),
        ("to=%2B33612345678&priority=1", ok.clone(), "priority"),
    ];
    for (q, body, param) in cases {
        let (status, resp) = send_sms(&app, &acct, q, body.clone()).await;
        assert_eq!(
            assert_error(status, &resp, 400, "validation_error"),
            [param],
            "{q} {body}"
        );
    }
    let (status, resp) = send(
        app.req(&acct, Method::POST, "/v2.0/sms?to=%2B33612345678")
            .header("content-type", "application/json")
            .body("{"),
    )
    .await;
    assert_error(status, &resp, 400, "invalid_json");
    assert_eq!(credit(&app, &acct).await, "100000.00");
    let (_, list) = send(app.req(&acct, Method::GET, "/v2.0/sms?direction=outbound&createdAfter=2000-01-01T00:00:00Z&createdBefore=2100-01-01T00:00:00Z")).await;
    assert_eq!(list["total"], 0);
}

async fn senders_need_approval_or_ownership(app: TestApp) {
    let acct = app.account().await;
    let (status, sms) = send_sms(
        &app,
        &acct,
        "to=%2B33612345678&from=SMS",
        json!({"body": "x"}),
    )
    .await;
    assert_eq!(status, 202);
    assert_eq!(sms["from"], "SMS");
    let (status, body) = send_sms(
        &app,
        &acct,
        "to=%2B33612345678&from=ACME",
        json!({"body": "x"}),
    )
    .await;
    assert_error(status, &body, 403, "sender_not_approved");
    let (status, _) = send(
        app.admin(
            Method::POST,
            &format!("/admin/accounts/{}/senders", acct.sid),
        )
        .json(&json!({"sender": "ACME"})),
    )
    .await;
    assert_eq!(status, 204);
    let (status, sms) = send_sms(
        &app,
        &acct,
        "to=%2B33612345678&from=ACME",
        json!({"body": "x"}),
    )
    .await;
    assert_eq!(status, 202);
    assert_eq!(sms["from"], "ACME");
    // A sub account may use its parent's approved senders.
    let sub = app.sub_account(&acct, "10.00").await;
    let (status, _) = send_sms(
        &app,
        &sub,
        "to=%2B33612345678&from=ACME",
        json!({"body": "x"}),
    )
    .await;
    assert_eq!(status, 202);
    let (status, body) = send_sms(
        &app,
        &acct,
        "to=%2B33612345678&from=%2B447700900150",
        json!({"body": "x"}),
    )
    .await;
    assert_error(status, &body, 403, "sender_not_approved");
    let mine = buy(&app, &acct, "country=GB&type=mobile").await;
    let (status, sms) = send_sms(
        &app,
        &acct,
        &format!("to=%2B33612345678&from={}", mine.replace('+', "%2B")),
        json!({"body": "x"}),
    )
    .await;
    assert_eq!(status, 202);
    assert_eq!(sms["from"], mine.as_str());
    let (_, sms) = send_sms(&app, &acct, "to=%2B447700900555", json!({"body": "x"})).await;
    assert_eq!(
        sms["from"],
        mine.as_str(),
        "an empty sender picks the account's number in the destination's country"
    );
}

async fn sends_need_credit(app: TestApp) {
    let poor = app
        .account_with(json!({"name": "poor", "credit": "10.00"}))
        .await;
    let long = "a".repeat(400);
    let (status, body) = send_sms(&app, &poor, "to=%2B33612345678", json!({"body": long})).await;
    assert_error(status, &body, 403, "insufficient_credit");
    assert_eq!(credit(&app, &poor).await, "10.00");
    let (status, _) = send_sms(&app, &poor, "to=%2B33612345678", json!({"body": "short"})).await;
    assert_eq!(status, 202);
    assert_eq!(credit(&app, &poor).await, "4.50");
    let (status, body) = send_sms(&app, &poor, "to=%2B33612345678", json!({"body": "again"})).await;
    assert_error(status, &body, 403, "insufficient_credit");
    let (_, list) = send(app.req(&poor, Method::GET, "/v2.0/sms?direction=outbound&createdAfter=2000-01-01T00:00:00Z&createdBefore=2100-01-01T00:00:00Z")).await;
    assert_eq!(list["total"], 1);
}

async fn search_filters_and_required_parameters(app: TestApp) {
    let acct = app.account().await;
    for (to, body, traffic) in [
        ("%2B33612345678", "hello world", "marketing"),
        ("%2B33612345679", "Goodbye", "alerting"),
        ("%2B33612345678", "50% off", "marketing"),
    ] {
        app.clock.advance_ms(1000);
        let (status, _) = send_sms(
            &app,
            &acct,
            &format!("to={to}&trafficType={traffic}"),
            json!({"body": body}),
        )
        .await;
        assert_eq!(status, 202);
    }
    let base = "/v2.0/sms?direction=outbound&createdAfter=2025-06-01T00:00:00Z&createdBefore=2025-06-02T00:00:00Z";
    let total = |q: String| {
        let app = &app;
        let acct = &acct;
        async move {
            let (status, body) = send(app.req(acct, Method::GET, &format!("{base}{q}"))).await;
            assert_eq!(status, 200, "{q}: {body}");
            body
        }
    };
    assert_eq!(total(String::new()).await["total"], 3);
    assert_eq!(total("&to=%2B33612345678".into()).await["total"], 2);
    assert_eq!(total("&contains=GOODBYE".into()).await["total"], 1);
    assert_eq!(total("&contains=50%25".into()).await["total"], 1);
    assert_eq!(total("&trafficType=alerting".into()).await["total"], 1);
    // The simulated network took each as it was stored, and the first two (taken 2 s and
    // 1 s ago) are past their planned moves, delivery included (nothing receives their
    // moves, nobody here owns their recipients), though the worker has not run.
    assert_eq!(total("&status=pending".into()).await["total"], 1);
    assert_eq!(total("&status=remote-queued".into()).await["total"], 0);
    assert_eq!(total("&status=sent".into()).await["total"], 0);
    assert_eq!(total("&status=created".into()).await["total"], 0);
    assert_eq!(total("&status=delivered".into()).await["total"], 2);
    assert_eq!(total("&from=%2B447700900000".into()).await["total"], 3);
    let sorted = total("&sort=created&order=asc".into()).await;
    assert_eq!(sorted["hits"][0]["body"], "hello world");
    let (_, none) = send(app.req(&acct, Method::GET, "/v2.0/sms?direction=inbound&createdAfter=2025-06-01T00:00:00Z&createdBefore=2025-06-02T00:00:00Z")).await;
    assert_eq!(none["total"], 0);
    let (_, window) = send(app.req(&acct, Method::GET, "/v2.0/sms?direction=outbound&createdAfter=2025-06-01T12:00:01.500Z&createdBefore=2025-06-02T00:00:00Z")).await;
    assert_eq!(window["total"], 2);
    for (q, param) in [
        (
            "createdAfter=2025-06-01T00:00:00Z&createdBefore=2025-06-02T00:00:00Z",
            "direction",
        ),
        (
            "direction=outbound&createdBefore=2025-06-02T00:00:00Z",
            "createdAfter",
        ),
        (
            "direction=outbound&createdAfter=2025-06-01T00:00:00Z",
            "createdBefore",
        ),
        (
            "direction=sideways&createdAfter=2025-06-01T00:00:00Z&createdBefore=2025-06-02T00:00:00Z",
            "direction",
        ),
        (
            "direction=outbound&createdAfter=yesterday&createdBefore=2025-06-02T00:00:00Z",
            "createdAfter",
        ),
        (
            "direction=outbound&createdAfter=2025-06-01T00:00:00Z&createdBefore=2025-06-02T00:00:00Z&contains=",
            "contains",
        ),
        (
            "direction=outbound&createdAfter=2025-06-01T00:00:00Z&createdBefore=2025-06-02T00:00:00Z&status=lost",
            "status",
        ),
        (
            "direction=outbound&createdAfter=2025-06-01T00:00:00Z&createdBefore=2025-06-02T00:00:00Z&to=123",
            "to",
        ),
        (
            "direction=outbound&createdAfter=2025-06-01T00:00:00Z&createdBefore=2025-06-02T00:00:00Z&sort=size",
            "sort",
        ),
    ] {
        let (status, body) = send(app.req(&acct, Method::GET, &format!("/v2.0/sms?{q}"))).await;
        assert_eq!(
            assert_error(status, &body, 400, "validation_error"),
            [param],
            "{q}"
        );
    }
    let long = "x".repeat(65);
    let (status, body) =
        send(app.req(&acct, Method::GET, &format!("{base}&contains={long}"))).await;
    assert_eq!(
        assert_error(status, &body, 400, "validation_error"),
        ["contains"]
    );
    // Another account sees none of them.
    let other = app.account().await;
    let (_, list) = send(app.req(&other, Method::GET, base)).await;
    assert_eq!(list["total"], 0);
    let sid = total(String::new()).await["hits"][0]["sid"]
        .as_str()
        .unwrap()
        .to_owned();
    let (status, body) = send(app.req(&other, Method::GET, &format!("/v2.0/sms/{sid}"))).await;
    assert_error(status, &body, 404, "not_found");
}

async fn inbound_sms_from_the_sandbox(app: TestApp) {
    let acct = app.account().await;
    // Its events are recorded while a console feed watches (nobody subscribes).
    app.watch_feed(&acct.sid).await;
    let number = buy(&app, &acct, "country=GB&type=mobile").await;
    let (status, sms) = send(
        app.req(&acct, Method::POST, "/sandbox/sms")
            .json(&json!({"from": "+33612345678", "to": number, "body": "Hi there 😀"})),
    )
    .await;
    assert_eq!(status, 201, "{sms}");
    assert_eq!(sms["direction"], "inbound");
    assert_eq!(sms["status"], "received");
    assert_eq!(sms["encoding"], "unicode");
    assert_eq!(sms["billingDebit"], "0.00");
    let mo = app.events(&acct.sid, "sms.mo").await;
    assert_eq!(mo.len(), 1);
    assert_eq!(mo[0]["type"], "IN");
    assert_eq!(mo[0]["status"], "RECEIVED");
    assert_eq!(mo[0]["text"], "Hi there 😀");
    assert_eq!(mo[0]["from"], "+33612345678");
    assert_eq!(mo[0]["date_received"], "2025-06-01 12:00:00");
    let (_, list) = send(app.req(&acct, Method::GET, "/v2.0/sms?direction=inbound&createdAfter=2025-06-01T00:00:00Z&createdBefore=2025-06-02T00:00:00Z")).await;
    assert_eq!(list["total"], 1);
    let (status, body) = send(
        app.req(&acct, Method::POST, "/sandbox/sms")
            .json(&json!({"from": "+33612345678", "to": "+447700900555", "body": "x"})),
    )
    .await;
    assert_error(status, &body, 404, "not_found");
    let (status, body) = send(
        app.req(&acct, Method::POST, "/sandbox/sms")
            .json(&json!({"from": "+33612345678", "to": number, "body": ""})),
    )
    .await;
    assert_eq!(
        assert_error(status, &body, 400, "validation_error"),
        ["body"]
    );
    let (status, body) = send(
        app.anon(Method::POST, "/sandbox/sms")
            .json(&json!({"from": "+33612345678", "to": number, "body": "x"})),
    )
    .await;
    assert_error(status, &body, 401, "auth_error");
}

async fn sms_to_a_platform_number_arrives_inbound(app: TestApp) {
    let alice = app.account().await;
    let bob = app.account().await;
    // Their events are recorded while console feeds watch them (nobody subscribes).
    app.watch_feed(&alice.sid).await;
    app.watch_feed(&bob.sid).await;
    let bobs = buy(&app, &bob, "country=GB&type=mobile").await;
    let (status, _) = send_sms(
        &app,
        &alice,
        &format!("to={}", bobs.replace('+', "%2B")),
        json!({"body": "Hello Bob"}),
    )
    .await;
    assert_eq!(status, 202);
    run_steps(&app, 4).await;
    let mo = app.events(&bob.sid, "sms.mo").await;
    assert_eq!(mo.len(), 1, "Bob received it");
    assert_eq!(mo[0]["text"], "Hello Bob");
    assert_eq!(mo[0]["to"], bobs.as_str());
    assert!(app.events(&alice.sid, "sms.mo").await.is_empty());
}

/// The sender's moves received by nobody do not make an SMS to a number of this platform a
/// planned delivery: its delivery reaches the number's owner, whose SMS events a feed
/// records.
async fn an_sms_nobody_watches_to_a_platform_number_still_arrives_inbound(app: TestApp) {
    let alice = app.account().await;
    let bob = app.account().await;
    app.watch_feed(&bob.sid).await;
    let bobs = buy(&app, &bob, "country=GB&type=mobile").await;
    let (status, sms) = send_sms(
        &app,
        &alice,
        &format!("to={}", bobs.replace('+', "%2B")),
        json!({"body": "Hello Bob"}),
    )
    .await;
    assert_eq!(status, 202, "{sms}");
    run_steps(&app, 4).await;
    let mo = app.events(&bob.sid, "sms.mo").await;
    assert_eq!(mo.len(), 1, "Bob received it");
    assert_eq!(mo[0]["text"], "Hello Bob");
    let sid = sms["sid"].as_str().unwrap();
    assert_eq!(fetch(&app, &alice, sid).await["status"], "delivered");
}

async fn multipart_and_unicode_are_billed_per_part(app: TestApp) {
    let acct = app.account().await;
    let (_, sms) = send_sms(
        &app,
        &acct,
        "to=%2B33612345678",
        json!({"body": "a".repeat(161)}),
    )
    .await;
    assert_eq!(
        (sms["parts"].as_i64(), sms["billingDebit"].as_str()),
        (Some(2), Some("11.00"))
    );
    let (_, sms) = send_sms(
        &app,
        &acct,
        "to=%2B33612345678",
        json!({"body": "ж".repeat(71)}),
    )
    .await;
    assert_eq!(
        (sms["encoding"].as_str(), sms["parts"].as_i64()),
        (Some("unicode"), Some(2))
    );
    let (_, sms) = send_sms(
        &app,
        &acct,
        "to=%2B33612345678&encoding=unicode",
        json!({"body": "plain"}),
    )
    .await;
    assert_eq!(sms["encoding"], "unicode");
    let (_, sms) = send_sms(
        &app,
        &acct,
        "to=%2B33612345678",
        json!({"body": "€".repeat(81)}),
    )
    .await;
    assert_eq!(
        (sms["encoding"].as_str(), sms["parts"].as_i64()),
        (Some("gsm"), Some(2))
    );
}

/// One account's burst is more than a tick takes (250 SMS while the writer is free). Taken
/// strictly by due time, another account's SMS sent after it would wait behind the whole
/// burst; the worker shares each tick out among the accounts with due SMS instead. (The
/// simulated network takes each SMS as it is stored: the burst contends for its next move,
/// `sent`, a step later.)
async fn one_accounts_backlog_does_not_hold_back_anothers_sms(app: TestApp) {
    let heavy = app.account().await;
    let light = app.account().await;
    // Watched, so that the worker makes every move (nothing is planned: see
    // `moves_nobody_receives_are_planned_and_read_on_time`).
    app.watch_feed(&heavy.sid).await;
    app.watch_feed(&light.sid).await;
    let mut burst = Vec::new();
    for _ in 0..260 {
        let (status, sms) =
            send_sms(&app, &heavy, "to=%2B33612345678", json!({"body": "burst"})).await;
        assert_eq!(status, 202, "{sms}");
        burst.push(sms["sid"].as_str().unwrap().to_owned());
    }
    let (status, sms) = send_sms(&app, &light, "to=%2B33612345679", json!({"body": "hi"})).await;
    assert_eq!(status, 202, "{sms}");
    let sid = sms["sid"].as_str().unwrap().to_owned();
    assert_eq!(fetch(&app, &light, &sid).await["status"], "pending");
    app.clock.advance_ms(200);
    app.tick().await;
    assert_eq!(fetch(&app, &light, &sid).await["status"], "sent");
    // The heavy account's took the rest of the tick, soonest first; its last wait.
    let mut waiting = 0;
    for sid in &burst {
        match fetch(&app, &heavy, sid).await["status"].as_str().unwrap() {
            "sent" => {}
            "pending" => waiting += 1,
            other => panic!("{sid} is {other}"),
        }
    }
    assert_eq!(waiting, 11, "250 a tick, one of them the other account's");
    assert_eq!(fetch(&app, &heavy, &burst[0]).await["status"], "sent");
    assert_eq!(fetch(&app, &heavy, &burst[259]).await["status"], "pending");

    // A step later the burst's next moves and its 11 left make 260 due again, with the
    // other account's first SMS and a second one, sent a step before. On PostgreSQL no walk
    // of the queue is due yet (one ran 200 ms ago): this tick is the node's hints alone,
    // shared out as well.
    let (status, sms) = send_sms(&app, &light, "to=%2B33612345679", json!({"body": "2"})).await;
    assert_eq!(status, 202, "{sms}");
    let second = sms["sid"].as_str().unwrap().to_owned();
    app.clock.advance_ms(200);
    app.tick().await;
    assert_eq!(fetch(&app, &light, &sid).await["status"], "remote-queued");
    assert_eq!(fetch(&app, &light, &second).await["status"], "sent");
    app.tick().await;
    assert_eq!(fetch(&app, &heavy, &burst[259]).await["status"], "sent");
}

/// SMS of several accounts share groups of requests and the worker's ticks, whose reads
/// are made for all their accounts at once (balances, billing modes, subscriptions) and
/// whose ledger lines are written together: each account keeps its own. Each event shows
/// its account's billing mode and goes to its account's webhooks only; each debit is in
/// its account's ledger, in order.
async fn accounts_sharing_groups_and_ticks_keep_their_own_modes_hooks_and_ledgers(app: TestApp) {
    use crate::webhooks::subscribe;
    let prepaid = app.account().await;
    let postpaid = app
        .account_with(json!({"name": "post", "billingMode": "postpaid"}))
        .await;
    let quiet = app.account().await;
    for (acct, hook) in [(&prepaid, "pre"), (&postpaid, "post"), (&quiet, "quiet")] {
        let endpoint = format!("https://example.org/{hook}");
        subscribe(&app, acct, "sms.mt.status_update", &endpoint, json!(null)).await;
    }
    // Sent at once, so that groups of requests hold both accounts' SMS.
    let sends = (0..20).map(|i| {
        let acct = if i % 2 == 0 { &prepaid } else { &postpaid };
        send_sms(
            &app,
            acct,
            "to=%2B33612345678",
            json!({"body": format!("n{i}")}),
        )
    });
    let mut sids: std::collections::HashMap<String, Vec<String>> = Default::default();
    for (i, (status, sms)) in futures_util::future::join_all(sends)
        .await
        .into_iter()
        .enumerate()
    {
        assert_eq!(status, 202, "{sms}");
        let owner = if i % 2 == 0 { &prepaid } else { &postpaid };
        sids.entry(owner.sid.clone())
            .or_default()
            .push(sms["sid"].as_str().unwrap().to_owned());
    }
    // Each SMS was taken by the network in its group's write, with its event; a tick adds
    // nothing before a step.
    app.tick().await;
    for (acct, mode) in [(&prepaid, "PREPAID"), (&postpaid, "POSTPAID")] {
        let events = app.events(&acct.sid, "sms.mt.status_update").await;
        assert_eq!(events.len(), 10, "{}", acct.sid);
        for e in &events {
            assert_eq!(e["b_customer_mode"], mode, "{e}");
            let hash = e["hash"].as_str().unwrap().to_lowercase();
            assert!(sids[&acct.sid].contains(&hash), "{e}");
        }
    }
    let (hooks, lines) = app
        .state
        .store
        .read(|c| {
            let hooks = c
                .query(
                    "SELECT a.sid, d.endpoint FROM deliveries d JOIN events e ON e.id = d.event_id \
                     JOIN accounts a ON a.id = e.account_id ORDER BY d.id",
                    dialtone_store::params![],
                )?
                .iter()
                .map(|r| Ok((r.text(0)?, r.text(1)?)))
                .collect::<Result<Vec<_>, dialtone_store::DbError>>()?;
            let lines = c
                .query(
                    "SELECT a.sid, l.cause, l.amount, l.balance_after FROM ledger l \
                     JOIN accounts a ON a.id = l.account_id WHERE l.kind = 'sms' ORDER BY l.id",
                    dialtone_store::params![],
                )?
                .iter()
                .map(|r| Ok((r.text(0)?, r.text(1)?, r.int(2)?, r.int(3)?)))
                .collect::<Result<Vec<_>, dialtone_store::DbError>>()?;
            Ok::<_, dialtone_store::DbError>((hooks, lines))
        })
        .await
        .expect("read");
    assert_eq!(hooks.len(), 20, "{hooks:?}");
    for (sid, endpoint) in &hooks {
        let own = if *sid == prepaid.sid { "pre" } else { "post" };
        assert_eq!(*endpoint, format!("https://example.org/{own}"), "{sid}");
    }
    for acct in [&prepaid, &postpaid] {
        let own: Vec<_> = lines.iter().filter(|l| l.0 == acct.sid).collect();
        let mut causes: Vec<String> = own.iter().map(|l| l.1.clone()).collect();
        causes.sort();
        let mut expected = sids[&acct.sid].clone();
        expected.sort();
        assert_eq!(
            causes, expected,
            "one debit per SMS, in its account's ledger"
        );
        // One writer on SQLite: each line's balance follows the one before. On PostgreSQL
        // holders of credit slices debit side by side, and a line's balance is the one its
        // statement saw (docs/decisions.md), not always in commit order.
        if app.backend == crate::helpers::Backend::Sqlite {
            for pair in own.windows(2) {
                assert_eq!(pair[1].3, pair[0].3 + pair[1].2, "{own:?}");
            }
        }
    }
    // A postpaid account shows no credit balance; the prepaid one's is what it was less
    // every line of its ledger.
    let spent: i64 = lines
        .iter()
        .filter(|l| l.0 == prepaid.sid)
        .map(|l| l.2)
        .sum();
    let expected = dialtone_domain::Money::parse_cents("100000.00")
        .expect("money")
        .checked_add(dialtone_domain::Money::from_units(spent))
        .expect("sum");
    assert_eq!(credit_of(&app, &prepaid).await, expected.to_string());
}

/// The account's credit as `GET /v2.0/billing/credit` shows it.
async fn credit_of(app: &TestApp, acct: &TestAccount) -> String {
    let (status, c) = send(app.req(acct, Method::GET, "/v2.0/billing/credit")).await;
    assert_eq!(status, 200, "{c}");
    c["amount"].as_str().expect("amount").to_owned()
}

/// An event's payload is made for its recipients: the SMS worker writes the whole SMS
/// object into the events a subscription or the SMS's own webhook receives. An event nobody
/// receives is written only while a console feed watches the account, with only the fields
/// that name the SMS and its status; with no feed watching (none ever did, or its watch ran
/// out), nothing could ever read it, and it is not written. Each written event is in its
/// move's transaction.
async fn events_nobody_receives_are_written_only_while_a_feed_watches(app: TestApp) {
    use crate::webhooks::subscribe;
    let quiet = app.account().await;
    let heard = app.account().await;
    let watched = app.account().await;
    subscribe(
        &app,
        &heard,
        "sms.mt.status_update",
        "https://example.org/heard",
        json!(null),
    )
    .await;
    // Another type does not make the account's SMS events received.
    subscribe(
        &app,
        &quiet,
        "sms.mo",
        "https://example.org/mo",
        json!(null),
    )
    .await;
    // Watched for the first SMS's four moves (0 to 600 ms), not for the next one's (800 ms on).
    app.watch_feed_for(&watched.sid, 700).await;
    let plain = json!({"body": "Hello"});
    let own = json!({"body": "Hello", "webhook": {"endpoint": "https://example.org/own"}});
    let mut sids = Vec::new();
    for (acct, body) in [
        (&quiet, &plain),
        (&heard, &plain),
        (&quiet, &own),
        (&watched, &plain),
    ] {
        let (status, sms) = send_sms(&app, acct, "to=%2B33612345678", body.clone()).await;
        assert_eq!(status, 202, "{sms}");
        sids.push(sms["sid"].as_str().unwrap().to_uppercase());
    }
    for _ in 0..4 {
        app.tick().await;
        app.clock.advance_ms(200);
    }
    let (status, sms) = send_sms(&app, &watched, "to=%2B33612345678", plain.clone()).await;
    assert_eq!(status, 202, "{sms}");
    sids.push(sms["sid"].as_str().unwrap().to_uppercase());
    for _ in 0..4 {
        app.tick().await;
        app.clock.advance_ms(200);
    }
    for (acct, sid) in [
        (&quiet, &sids[0]),
        (&watched, &sids[3]),
        (&watched, &sids[4]),
    ] {
        let sms = fetch(&app, acct, &sid.to_lowercase()).await;
        assert_eq!(sms["status"], "delivered", "moved all the same: {sms}");
    }
    let statuses = ["PENDING", "SENT", "REMOTE_QUEUED", "DELIVERED"];
    let of = |events: &[Value], sid: &str| -> Vec<Value> {
        events
            .iter()
            .filter(|e| e["hash"] == sid)
            .cloned()
            .collect()
    };
    let quiet_events = app.events(&quiet.sid, "sms.mt.status_update").await;
    let heard_events = app.events(&heard.sid, "sms.mt.status_update").await;
    let watched_events = app.events(&watched.sid, "sms.mt.status_update").await;
    assert_eq!(
        of(&quiet_events, &sids[0]),
        Vec::<Value>::new(),
        "nobody receives them and no feed watches"
    );
    assert_eq!(
        of(&watched_events, &sids[4]),
        Vec::<Value>::new(),
        "nobody receives them and the watch ran out"
    );
    for (events, whole) in [
        (of(&heard_events, &sids[1]), true),
        (of(&quiet_events, &sids[2]), true),
        (of(&watched_events, &sids[3]), false),
    ] {
        let seen: Vec<&str> = events
            .iter()
            .map(|e| e["status"].as_str().unwrap())
            .collect();
        assert_eq!(seen, statuses, "{events:?}");
        for (moves, (e, status)) in events.iter().zip(statuses).enumerate() {
            if whole {
                assert_eq!(e["text"], "Hello", "{e}");
                assert_eq!(e["b_customer_mode"], "PREPAID", "{e}");
                let history = e["status_history"].as_array().map(Vec::len);
                assert_eq!(history, Some(moves + 1), "the moves so far: {e}");
            } else {
                assert_eq!(e, &json!({"hash": e["hash"], "status": status}), "{e}");
            }
        }
    }
}

/// The simulated network answers without I/O, so an SMS for it is handed over in the write
/// that stores it: the answer shows it as created, and from then on it is `pending`, with
/// its move's event written and its next move due a step later, before any tick of the
/// worker. A destination the network refuses stays `created` for the worker, and an SMS the
/// credit refuses leaves no event.
async fn the_simulated_network_takes_an_sms_in_the_write_that_stores_it(app: TestApp) {
    use crate::webhooks::subscribe;
    let acct = app
        .account_with(json!({"name": "taken", "credit": "10.00"}))
        .await;
    let hook = "https://example.org/taken";
    subscribe(&app, &acct, "sms.mt.status_update", hook, json!(null)).await;
    let (status, sms) = send_sms(&app, &acct, "to=%2B33612345678", json!({"body": "Hi"})).await;
    assert_eq!(status, 202, "{sms}");
    assert_eq!(
        sms["status"], "created",
        "the answer shows the SMS as created"
    );
    let sid = sms["sid"].as_str().unwrap().to_owned();
    assert_eq!(fetch(&app, &acct, &sid).await["status"], "pending");
    let events = app.events(&acct.sid, "sms.mt.status_update").await;
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0]["status"], "PENDING");
    assert_eq!(events[0]["text"], "Hi", "received: the whole SMS object");
    assert_eq!(events[0]["b_customer_mode"], "PREPAID");
    assert_eq!(events[0]["status_history"][0]["old_status"], "CREATED");
    app.tick().await;
    assert_eq!(
        fetch(&app, &acct, &sid).await["status"],
        "pending",
        "its next move is a step later"
    );
    app.clock.advance_ms(200);
    app.tick().await;
    assert_eq!(fetch(&app, &acct, &sid).await["status"], "sent");

    // Refused at submission: left to the worker, which ends it in `error` with a refund.
    let (status, refused) = send_sms(&app, &acct, "to=%2B447700900003", json!({"body": "x"})).await;
    assert_eq!(status, 202, "{refused}");
    let refused = refused["sid"].as_str().unwrap().to_owned();
    assert_eq!(fetch(&app, &acct, &refused).await["status"], "created");
    assert_eq!(credit(&app, &acct).await, "0.00", "10.00 - 5.50 - 4.50");
    app.tick().await;
    assert_eq!(fetch(&app, &acct, &refused).await["status"], "error");
    assert_eq!(credit(&app, &acct).await, "4.50", "refunded");

    // Refused for its credit: nothing stored, no event.
    let before = app.events(&acct.sid, "sms.mt.status_update").await.len();
    let long = "a".repeat(400);
    let (status, body) = send_sms(&app, &acct, "to=%2B33612345678", json!({"body": long})).await;
    assert_error(status, &body, 403, "insufficient_credit");
    let after = app.events(&acct.sid, "sms.mt.status_update").await.len();
    assert_eq!(after, before, "no event for an SMS the credit refused");
}

/// SMS of one account sent at once are stored and debited in one group; when the credit
/// does not cover them all, as many are taken, in order, as it covers, and the others are
/// refused and leave nothing (no SMS, no event, no ledger line), as when sent apart.
async fn sends_at_once_short_of_credit_take_what_it_covers(app: TestApp) {
    let acct = app
        .account_with(json!({"name": "short", "credit": "20.00"}))
        .await;
    // Its events are recorded while a console feed watches (nobody subscribes).
    app.watch_feed(&acct.sid).await;
    let sends = (0..6).map(|i| {
        send_sms(
            &app,
            &acct,
            "to=%2B33612345678",
            json!({"body": format!("n{i}")}),
        )
    });
    let answers = futures_util::future::join_all(sends).await;
    let taken = answers.iter().filter(|(status, _)| *status == 202).count();
    for (status, body) in answers.iter().filter(|(status, _)| *status != 202) {
        assert_error(*status, body, 403, "insufficient_credit");
    }
    assert_eq!(taken, 3, "20.00 covers three SMS of 5.50: {answers:?}");
    assert_eq!(credit(&app, &acct).await, "3.50");
    let (_, list) = send(app.req(&acct, Method::GET, "/v2.0/sms?direction=outbound&createdAfter=2000-01-01T00:00:00Z&createdBefore=2100-01-01T00:00:00Z")).await;
    assert_eq!(list["total"], 3, "the refused SMS left nothing");
    let events = app.events(&acct.sid, "sms.mt.status_update").await;
    assert_eq!(events.len(), 3, "one event for each SMS taken: {events:?}");
    let sid = acct.sid.clone();
    let (sum, lines) = app
        .state
        .store
        .read(move |c| {
            let row = c.query_one(
                "SELECT CAST(COALESCE(SUM(l.amount), 0) AS BIGINT), \
                 CAST(COALESCE(SUM(CASE WHEN l.kind = 'sms' THEN 1 ELSE 0 END), 0) AS BIGINT) \
                 FROM ledger l JOIN accounts a ON a.id = l.account_id WHERE a.sid = $1",
                dialtone_store::params![sid],
            )?;
            Ok::<_, dialtone_store::DbError>((row.money(0)?, row.int(1)?))
        })
        .await
        .expect("read");
    assert_eq!(lines, 3, "one ledger line per SMS taken");
    assert_eq!(sum.to_string(), "3.50", "the ledger adds up to the balance");
}
