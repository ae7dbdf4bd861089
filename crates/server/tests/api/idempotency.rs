//! `Idempotency-Key`: replays, mismatches, bad keys, per-account scope, 24-hour retention,
//! and keys held across nodes.

use reqwest::Method;
use serde_json::{Value, json};

use crate::both_backends;
use crate::helpers::{TestAccount, TestApp, assert_error, send};

both_backends!(
    a_keyed_post_acts_once_and_replays_its_answer,
    keys_are_checked_scoped_and_forgotten_after_a_day,
    a_running_request_holds_its_key
);

const SMS: &str = "/v2.0/sms?to=%2B33612345678";

async fn sms_count(app: &TestApp, acct: &TestAccount) -> i64 {
    let (_, list) = send(app.req(acct, Method::GET, "/v2.0/sms?direction=outbound&createdAfter=2000-01-01T00:00:00Z&createdBefore=2100-01-01T00:00:00Z")).await;
    list["total"].as_i64().unwrap_or_else(|| panic!("{list}"))
}

async fn credit(app: &TestApp, acct: &TestAccount) -> Value {
    send(app.req(acct, Method::GET, "/v2.0/billing/credit"))
        .await
        .1["amount"]
        .clone()
}

async fn a_keyed_post_acts_once_and_replays_its_answer(app: TestApp) {
    let acct = app.account().await;
    let post = |key: &str, text: &str| {
        app.req(&acct, Method::POST, SMS)
            .header("Idempotency-Key", key)
            .json(&json!({"body": text}))
    };
    let first = post("order-1", "hello").send().await.unwrap();
    assert_eq!(first.status(), 202);
    assert!(first.headers().get("idempotent-replayed").is_none());
    let first: Value = first.json().await.unwrap();
    let after_first = credit(&app, &acct).await;

    let again = post("order-1", "hello").send().await.unwrap();
    assert_eq!(again.status(), 202);
    assert_eq!(again.headers()["idempotent-replayed"], "true");
    assert_eq!(again.headers()["content-type"], "application/json");
    assert!(again.headers().contains_key("x-request-id"));
    let again: Value = again.json().await.unwrap();
    assert_eq!(again, first, "the first answer, byte for byte");
    assert_eq!(sms_count(&app, &acct).await, 1, "sent once");
    assert_eq!(credit(&app, &acct).await, after_first, "debited once");

    // Another node on the same database replays it too.
    let (base, _node) = app.second_node().await;
    let (status, replayed) = send(
        reqwest::Client::new()
            .post(format!("{base}{SMS}"))
            .header("x-api-key", &acct.api_key)
            .header("Idempotency-Key", "order-1")
            .json(&json!({"body": "hello"})),
    )
    .await;
    assert_eq!(status, 202);
    assert_eq!(replayed, first);

    // The same key with another request is refused and changes nothing.
    let (status, body) = send(post("order-1", "hello again")).await;
    assert_error(status, &body, 400, "idempotency_mismatch");
    let (status, body) = send(
        app.req(&acct, Method::POST, "/v2.0/sms?to=%2B33612345679")
            .header("Idempotency-Key", "order-1")
            .json(&json!({"body": "hello"})),
    )
    .await;
    assert_error(status, &body, 400, "idempotency_mismatch");
    assert_eq!(sms_count(&app, &acct).await, 1);

    // A refusal is an answer too: replayed, not retried.
    let (status, body) = send(post("order-2", "")).await;
    assert_error(status, &body, 400, "validation_error");
    let replay = post("order-2", "").send().await.unwrap();
    assert_eq!(replay.status(), 400);
    assert_eq!(replay.headers()["idempotent-replayed"], "true");

    // Without a key every POST acts.
    for _ in 0..2 {
        let (status, _) = send(
            app.req(&acct, Method::POST, SMS)
                .json(&json!({"body": "x"})),
        )
        .await;
        assert_eq!(status, 202);
    }
    assert_eq!(sms_count(&app, &acct).await, 3);
}

async fn keys_are_checked_scoped_and_forgotten_after_a_day(app: TestApp) {
    let acct = app.account().await;
    let other = app.account().await;
    let post = |who: &TestAccount, key: &str, text: &str| {
        app.req(who, Method::POST, SMS)
            .header("Idempotency-Key", key)
            .json(&json!({"body": text}))
    };
    // Bad keys: empty, 256 characters, not text.
    for key in [String::new(), "k".repeat(256)] {
        let (status, body) = send(post(&acct, &key, "x")).await;
        assert_error(status, &body, 400, "validation_error");
        assert_eq!(body["details"][0]["param"], "Idempotency-Key");
    }
    let (status, _) = send(post(&acct, &"k".repeat(255), "x")).await;
    assert_eq!(status, 202, "255 characters are allowed");
    assert_eq!(sms_count(&app, &acct).await, 1, "refused keys sent nothing");
    // A wrong credential is still 401, whatever the key.
    let (status, body) = send(
        app.anon(Method::POST, "/v2.0/sms?to=%2B33612345678")
            .header("Idempotency-Key", "")
            .json(&json!({"body": "x"})),
    )
    .await;
    assert_error(status, &body, 401, "auth_error");
    let (status, body) = send(
        app.anon(Method::POST, "/v2.0/sms?to=%2B33612345678")
            .header("x-api-key", "dt_wrong")
            .header("Idempotency-Key", "k1")
            .json(&json!({"body": "x"})),
    )
    .await;
    assert_error(status, &body, 401, "auth_error");

    // Keys belong to an account: another account's same key acts for it.
    let (_, mine) = send(post(&acct, "shared", "mine")).await;
    let (status, theirs) = send(post(&other, "shared", "theirs")).await;
    assert_eq!(status, 202);
    assert_ne!(mine["sid"], theirs["sid"]);
    assert_eq!(sms_count(&app, &other).await, 1);

    // Kept 24 hours, then forgotten: the key acts again, with any request.
    app.clock.advance_ms(24 * 3600 * 1000 - 1);
    let (_, replay) = send(post(&acct, "shared", "mine")).await;
    assert_eq!(replay["sid"], mine["sid"]);
    app.clock.advance_ms(1);
    app.tick().await;
    let (status, fresh) = send(post(&acct, "shared", "something else")).await;
    assert_eq!(status, 202);
    assert_ne!(fresh["sid"], mine["sid"]);
    assert_eq!(sms_count(&app, &acct).await, 3);

    // GET, PATCH and DELETE ignore the header.
    let (status, _) = send(
        app.req(&acct, Method::GET, "/v2.0/ping")
            .header("Idempotency-Key", "k".repeat(300)),
    )
    .await;
    assert_eq!(status, 200);
}

async fn a_running_request_holds_its_key(app: TestApp) {
    use dialtone_store::idempotency::{self, Answer, Begin};
    let acct = app.account().await;
    let id = app
        .state
        .store
        .read({
            let sid = dialtone_domain::Sid::parse(&acct.sid).unwrap();
            move |c| dialtone_store::accounts::by_sid(c, &sid)
        })
        .await
        .unwrap()
        .unwrap()
        .id;
    let now = dialtone_domain::Clock::now(&app.clock);
    let begin = |hash: &'static str, at: dialtone_domain::Timestamp| {
        app.state
            .store
            .write(move |c| idempotency::begin(c, id, "k", hash, 60_000, at))
    };
    assert_eq!(begin("h1", now).await.unwrap(), Begin::Run);
    assert_eq!(begin("h1", now).await.unwrap(), Begin::InFlight);
    // A retry of the same request while the first runs: 429 with Retry-After over HTTP.
    // After the hold lapses (the first attempt died), a retry runs it.
    let later = dialtone_domain::Timestamp::from_millis(now.millis() + 60_000);
    assert_eq!(begin("h1", later).await.unwrap(), Begin::Run);
    assert_eq!(begin("h2", later).await.unwrap(), Begin::Mismatch);
    let answer = Answer {
        status: 201,
        content_type: Some("application/json".into()),
        body: b"{}".to_vec(),
    };
    let a = answer.clone();
    app.state
        .store
        .write(move |c| idempotency::finish(c, id, "k", &a))
        .await
        .unwrap();
    assert_eq!(begin("h1", later).await.unwrap(), Begin::Replay(answer));
    // Over HTTP: a key held by a running request answers 429 with Retry-After. (The first
    // request is made to look still running by clearing its stored answer.)
    let post = || {
        app.req(&acct, Method::POST, SMS)
            .header("Idempotency-Key", "busy")
            .json(&json!({"body": "x"}))
    };
    assert_eq!(post().send().await.unwrap().status(), 202);
    let until = now.millis() + 60_000;
    app.state
        .store
        .write(move |c| {
            c.execute(
                "UPDATE idempotency_keys SET status = NULL, locked_until = $1 WHERE key = 'busy'",
                &[until.into()],
            )
        })
        .await
        .unwrap();
    let held = post().send().await.unwrap();
    assert_eq!(held.status(), 429);
    assert_eq!(held.headers()["retry-after"], "1");
    let body: Value = held.json().await.unwrap();
    assert_eq!(body["code"], "rate_limited");
    assert_eq!(
        sms_count(&app, &acct).await,
        1,
        "the held request did not run twice"
    );
    // The hold lapses, the request's change committed but its answer never kept (its
    // process died in between): a retry is refused rather than run a second time.
    app.clock.advance_ms(60_001);
    let (status, body) = send(post()).await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["code"], "idempotency_answer_lost");
    assert_eq!(sms_count(&app, &acct).await, 1, "never sent twice");
    // A request that died before committing anything still runs again after the hold.
    let key_now = dialtone_domain::Clock::now(&app.clock);
    let (status, _) = send(
        app.req(&acct, Method::POST, SMS)
            .header("Idempotency-Key", "died-early")
            .json(&json!({"body": "y"})),
    )
    .await;
    assert_eq!(status, 202);
    let until = key_now.millis() + 60_000;
    app.state
        .store
        .write(move |c| {
            c.execute(
                "UPDATE idempotency_keys SET status = NULL, committed = $1, locked_until = $2 WHERE key = 'died-early'",
                &[false.into(), until.into()],
            )
        })
        .await
        .unwrap();
    app.clock.advance_ms(60_001);
    let (status, _) = send(
        app.req(&acct, Method::POST, SMS)
            .header("Idempotency-Key", "died-early")
            .json(&json!({"body": "y"})),
    )
    .await;
    assert_eq!(status, 202, "nothing was committed: it runs");
}
