//! The number store, reservations, owned numbers and end users in use.

use std::collections::HashSet;

use reqwest::Method;
use serde_json::{Value, json};

use crate::both_backends;
use crate::helpers::{Backend, TestAccount, TestApp, assert_error, send};

both_backends!(
    store_lists_what_is_on_offer,
    reserve_buy_and_own,
    every_store_rule_has_its_error,
    reservations_expire_on_time_without_a_request,
    cancel_frees_the_numbers,
    buying_needs_credit_and_an_active_account,
    owned_numbers_filters_and_release,
    end_users_in_use_cannot_be_deleted,
    racing_accounts_and_nodes_never_share_a_number,
);

async fn reserve(app: &TestApp, acct: &TestAccount, query: &str) -> (reqwest::StatusCode, Value) {
    send(app.req(acct, Method::POST, &format!("/v2.0/numbers/store?{query}"))).await
}

async fn reserve_and_buy(app: &TestApp, acct: &TestAccount, query: &str) -> Vec<String> {
    let (status, r) = reserve(app, acct, query).await;
    assert_eq!(status, 200, "{r}");
    let (status, bought) = send(app.req(
        acct,
        Method::POST,
        &format!("/v2.0/numbers/store/{}", r["token"].as_str().unwrap()),
    ))
    .await;
    assert_eq!(status, 200, "{bought}");
    bought["numbers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["e164"].as_str().unwrap().to_owned())
        .collect()
}

async fn available(
    app: &TestApp,
    acct: &TestAccount,
    country: &str,
    ty: &str,
    prefix: &str,
) -> i64 {
    let (_, list) = send(app.req(
        acct,
        Method::GET,
        &format!("/v2.0/numbers/store/prefixes?country={country}&type={ty}"),
    ))
    .await;
    list.as_array()
        .unwrap()
        .iter()
        .find(|p| p["prefix"] == prefix)
        .map_or(0, |p| p["available"].as_i64().unwrap())
}

async fn store_lists_what_is_on_offer(app: TestApp) {
    let acct = app.account().await;
    let (status, countries) =
        send(app.req(&acct, Method::GET, "/v2.0/numbers/store/countries")).await;
    assert_eq!(status, 200);
    let codes: Vec<&str> = countries
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["code"].as_str().unwrap())
        .collect();
    for c in ["AU", "FR", "GB", "US"] {
        assert!(codes.contains(&c), "{countries}");
    }
    assert!(
        countries
            .as_array()
            .unwrap()
            .contains(&json!({"code": "GB", "name": "United Kingdom"}))
    );
    let (status, types) =
        send(app.req(&acct, Method::GET, "/v2.0/numbers/store/types?country=GB")).await;
    assert_eq!(status, 200);
    assert!(
        types
            .as_array()
            .unwrap()
            .contains(&json!({"type": "mobile", "classes": ["classic", "gold"]})),
        "{types}"
    );
    assert!(
        types
            .as_array()
            .unwrap()
            .contains(&json!({"type": "geographic", "classes": ["classic"]})),
        "{types}"
    );
    let (status, prefixes) = send(app.req(
        &acct,
        Method::GET,
        "/v2.0/numbers/store/prefixes?country=GB&type=geographic",
    ))
    .await;
    assert_eq!(status, 200);
    assert_eq!(
        prefixes,
        json!([{"prefix": "+44113", "area": "Leeds", "available": 1000}, {"prefix": "+4420", "area": "London", "available": 1000}])
    );
    let (_, none) = send(app.req(&acct, Method::GET, "/v2.0/numbers/store/types?country=ZZ")).await;
    assert_eq!(none, json!([]));
    for (path, param) in [
        ("/v2.0/numbers/store/types", "country"),
        ("/v2.0/numbers/store/types?country=gbr", "country"),
        ("/v2.0/numbers/store/prefixes?country=GB", "type"),
        (
            "/v2.0/numbers/store/prefixes?country=GB&type=landline",
            "type",
        ),
    ] {
        let (status, body) = send(app.req(&acct, Method::GET, path)).await;
        assert_eq!(
            assert_error(status, &body, 400, "validation_error"),
            [param],
            "{path}"
        );
    }
}

async fn reserve_and_buy_flow(app: &TestApp) -> (TestAccount, Vec<String>) {
    let acct = app.account().await;
    let (status, r) = reserve(
        app,
        &acct,
        "country=GB&type=geographic&quantity=3&prefix=%2B4420",
    )
    .await;
    assert_eq!(status, 200, "{r}");
    let token = r["token"].as_str().unwrap().to_owned();
    assert!(
        token.len() >= 40
            && token
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    );
    assert_eq!(r["status"], "reserved");
    assert_eq!(r["expires"], "2025-06-01T12:05:00.000Z");
    assert_eq!(
        (
            r["country"].as_str(),
            r["type"].as_str(),
            r["class"].as_str()
        ),
        (Some("GB"), Some("geographic"), Some("classic"))
    );
    assert_eq!(
        r["items"],
        json!([{"e164": "+442079460000"}, {"e164": "+442079460001"}, {"e164": "+442079460002"}])
    );
    assert_eq!(
        r["cost"],
        json!({"setup": "300.00", "monthly": "300.00", "currency": "EUR"})
    );
    assert_eq!(
        available(app, &acct, "GB", "geographic", "+4420").await,
        997
    );
    let (_, again) =
        send(app.req(&acct, Method::GET, &format!("/v2.0/numbers/store/{token}"))).await;
    assert_eq!(again, r);
    let (status, bought) =
        send(app.req(&acct, Method::POST, &format!("/v2.0/numbers/store/{token}"))).await;
    assert_eq!(status, 200, "{bought}");
    assert_eq!(bought["debit"], "600.00");
    let numbers: Vec<String> = bought["numbers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["e164"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(numbers, ["+442079460000", "+442079460001", "+442079460002"]);
    assert_eq!(
        bought["numbers"][0],
        json!({"e164": "+442079460000", "country": "GB", "class": "classic", "type": "geographic",
               "assigned": "2025-06-01T12:00:00.000Z", "scenario": null, "endUser": null, "monthlyPrice": "100.00"})
    );
    (acct, numbers)
}

async fn reserve_buy_and_own(app: TestApp) {
    let (acct, numbers) = reserve_and_buy_flow(&app).await;
    let (_, credit) = send(app.req(&acct, Method::GET, "/v2.0/billing/credit")).await;
    assert_eq!(credit["amount"], "99400.00");
    let (_, list) = send(app.req(&acct, Method::GET, "/v2.0/numbers?sort=e164&order=asc")).await;
    assert_eq!(list["total"], 3);
    let listed: Vec<&str> = list["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["e164"].as_str().unwrap())
        .collect();
    assert_eq!(listed, numbers);
    let (status, one) = send(app.req(&acct, Method::GET, "/v2.0/numbers/+442079460001")).await;
    assert_eq!(status, 200);
    assert_eq!(one["e164"], "+442079460001");
    let assigned = app.events(&acct.sid, "did.assigned").await;
    assert_eq!(assigned.len(), 3);
    assert_eq!(assigned[0]["intl_number"], "+442079460000");
    assert_eq!(assigned[0]["type"], "GEOGRAPHIC");
    assert_eq!(assigned[0]["class"], "CLASSIC");
    assert_eq!(assigned[0]["assigned_at"], "2025-06-01 12:00:00");
    // Numbers of one account are invisible to another.
    let other = app.account().await;
    let (status, body) = send(app.req(&other, Method::GET, "/v2.0/numbers/+442079460001")).await;
    assert_error(status, &body, 404, "not_found");
    let (status, body) = send(app.req(&other, Method::DELETE, "/v2.0/numbers/+442079460001")).await;
    assert_error(status, &body, 404, "not_found");
}

async fn every_store_rule_has_its_error(app: TestApp) {
    let acct = app.account().await;
    for (q, param) in [
        ("country=GB&type=geographic&quantity=0", "quantity"),
        ("country=GB&type=geographic&quantity=101", "quantity"),
        ("country=GB&type=geographic&prefix=4420", "prefix"),
        ("country=GB&type=geographic&prefix=%2B0", "prefix"),
        ("country=GB&type=geographic&prefix=%2B1234567890", "prefix"),
        ("country=GB&type=geographic&area=Leeds%3B", "area"),
        (
            "country=GB&type=geographic&area=aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
            "area",
        ),
        ("country=GB&type=geographic&class=silver", "class"),
        ("type=geographic", "country"),
        ("country=GB", "type"),
        ("country=GB&type=geographic&colour=red", "colour"),
    ] {
        let (status, body) = reserve(&app, &acct, q).await;
        assert_eq!(
            assert_error(status, &body, 400, "validation_error"),
            [param],
            "{q}"
        );
    }
    let (status, body) = reserve(&app, &acct, "country=ZZ&type=geographic").await;
    assert_error(status, &body, 404, "not_found");
    let (status, body) = reserve(
        &app,
        &acct,
        "country=GB&type=geographic&quantity=100&area=Nowhere",
    )
    .await;
    assert_error(status, &body, 400, "number_not_available");

    let (status, r) = reserve(&app, &acct, "country=GB&type=geographic&area=leeds").await;
    assert_eq!(status, 200, "{r}");
    assert_eq!(
        r["items"][0]["e164"], "+441134960000",
        "area matches case-insensitively"
    );
    let token = r["token"].as_str().unwrap().to_owned();
    let (status, body) = reserve(&app, &acct, "country=GB&type=mobile").await;
    assert_error(status, &body, 400, "reservation_exists");
    let short = &token[..39];
    for m in [Method::GET, Method::POST, Method::DELETE] {
        let (status, body) = send(app.req(&acct, m, &format!("/v2.0/numbers/store/{short}"))).await;
        assert_eq!(
            assert_error(status, &body, 400, "validation_error"),
            ["token"]
        );
    }
    let unknown = "x".repeat(48);
    let (status, body) = send(app.req(
        &acct,
        Method::GET,
        &format!("/v2.0/numbers/store/{unknown}"),
    ))
    .await;
    assert_error(status, &body, 404, "not_found");
    // Another account's token is 404 for every operation, and changes nothing.
    let other = app.account().await;
    for m in [Method::GET, Method::POST, Method::DELETE] {
        let (status, body) =
            send(app.req(&other, m, &format!("/v2.0/numbers/store/{token}"))).await;
        assert_error(status, &body, 404, "not_found");
    }
    let (status, _) =
        send(app.req(&acct, Method::POST, &format!("/v2.0/numbers/store/{token}"))).await;
    assert_eq!(status, 200);
    let (status, body) =
        send(app.req(&acct, Method::POST, &format!("/v2.0/numbers/store/{token}"))).await;
    assert_eq!(
        assert_error(status, &body, 400, "validation_error"),
        ["token"],
        "buying twice"
    );
    let (status, body) = send(app.req(
        &acct,
        Method::DELETE,
        &format!("/v2.0/numbers/store/{token}"),
    ))
    .await;
    assert_error(status, &body, 400, "validation_error");
    let (_, list) = send(app.req(&acct, Method::GET, "/v2.0/numbers")).await;
    assert_eq!(list["total"], 1);
    // After a purchase the account may reserve again.
    let (status, _) = reserve(&app, &acct, "country=GB&type=mobile").await;
    assert_eq!(status, 200);
}

async fn reservations_expire_on_time_without_a_request(app: TestApp) {
    let acct = app.account().await;
    let (_, r) = reserve(&app, &acct, "country=US&type=tollfree&quantity=5").await;
    let token = r["token"].as_str().unwrap().to_owned();
    assert_eq!(available(&app, &acct, "US", "tollfree", "+1800").await, 95);
    app.clock.advance_ms(4 * 60 * 1000 + 59_999);
    assert_eq!(app.tick().await, 0, "not yet");
    app.clock.advance_ms(1);
    assert_eq!(app.tick().await, 1, "expired by the worker");
    assert_eq!(
        available(&app, &acct, "US", "tollfree", "+1800").await,
        100,
        "numbers freed"
    );
    let (_, r) = send(app.req(&acct, Method::GET, &format!("/v2.0/numbers/store/{token}"))).await;
    assert_eq!(r["status"], "expired");
    let (status, body) =
        send(app.req(&acct, Method::POST, &format!("/v2.0/numbers/store/{token}"))).await;
    assert_error(status, &body, 400, "reservation_expired");
    let (_, list) = send(app.req(&acct, Method::GET, "/v2.0/numbers")).await;
    assert_eq!(list["total"], 0);
    let (_, credit) = send(app.req(&acct, Method::GET, "/v2.0/billing/credit")).await;
    assert_eq!(credit["amount"], "100000.00", "nothing debited");

    // Without the worker, an ended hold is seen as expired by the next request.
    let (_, r) = reserve(&app, &acct, "country=US&type=tollfree").await;
    app.clock.advance_ms(5 * 60 * 1000);
    let token = r["token"].as_str().unwrap();
    let (status, body) =
        send(app.req(&acct, Method::POST, &format!("/v2.0/numbers/store/{token}"))).await;
    assert_error(status, &body, 400, "reservation_expired");
}

async fn cancel_frees_the_numbers(app: TestApp) {
    let acct = app.account().await;
    let (_, r) = reserve(&app, &acct, "country=AU&type=mobile&quantity=4").await;
    let token = r["token"].as_str().unwrap().to_owned();
    let (status, _) = send(app.req(
        &acct,
        Method::DELETE,
        &format!("/v2.0/numbers/store/{token}"),
    ))
    .await;
    assert_eq!(status, 204);
    let (_, r) = send(app.req(&acct, Method::GET, &format!("/v2.0/numbers/store/{token}"))).await;
    assert_eq!(r["status"], "cancelled");
    assert_eq!(
        r["items"].as_array().unwrap().len(),
        4,
        "a cancelled reservation still lists what it held"
    );
    assert_eq!(available(&app, &acct, "AU", "mobile", "+614").await, 154);
    let (status, body) =
        send(app.req(&acct, Method::POST, &format!("/v2.0/numbers/store/{token}"))).await;
    assert_error(status, &body, 400, "reservation_expired");
    let (status, body) = send(app.req(
        &acct,
        Method::DELETE,
        &format!("/v2.0/numbers/store/{token}"),
    ))
    .await;
    assert_error(status, &body, 400, "reservation_expired");
    let (status, _) = reserve(&app, &acct, "country=AU&type=mobile").await;
    assert_eq!(status, 200, "a new reservation after cancelling");
}

async fn buying_needs_credit_and_an_active_account(app: TestApp) {
    let poor = app
        .account_with(json!({"name": "poor", "credit": "5.00"}))
        .await;
    // A reservation needs the credit to buy what it holds: refused, nothing held.
    let (status, body) = reserve(&app, &poor, "country=GB&type=mobile&class=gold").await;
    assert_error(status, &body, 403, "insufficient_credit");
    let rich = app.account().await;
    let (status, r) = reserve(&app, &rich, "country=GB&type=mobile&class=gold").await;
    assert_eq!(status, 200, "the numbers were not held: {r}");
    let (_, credit) = send(app.req(&poor, Method::GET, "/v2.0/billing/credit")).await;
    assert_eq!(credit["amount"], "5.00");
    assert!(app.events(&poor.sid, "did.assigned").await.is_empty());
    let (_, list) = send(app.req(&poor, Method::GET, "/v2.0/numbers")).await;
    assert_eq!(list["total"], 0);
}

async fn owned_numbers_filters_and_release(app: TestApp) {
    let acct = app.account().await;
    let geo = reserve_and_buy(
        &app,
        &acct,
        "country=GB&type=geographic&quantity=2&area=Leeds",
    )
    .await;
    let mobile = reserve_and_buy(&app, &acct, "country=GB&type=mobile&class=gold").await;
    let (_, all) = send(app.req(&acct, Method::GET, "/v2.0/numbers")).await;
    assert_eq!(all["total"], 3);
    let count = |q: &'static str| {
        let app = &app;
        let acct = &acct;
        async move {
            let (status, body) =
                send(app.req(acct, Method::GET, &format!("/v2.0/numbers?{q}"))).await;
            assert_eq!(status, 200, "{q}: {body}");
            body["total"].as_i64().unwrap()
        }
    };
    assert_eq!(count("class=gold").await, 1);
    assert_eq!(count("type=geographic").await, 2);
    assert_eq!(count("contains=4960001").await, 1);
    assert_eq!(count("contains=%2B44").await, 3);
    assert_eq!(count("detached=true").await, 3);
    assert_eq!(count("sid=abcdefgh").await, 0);
    for (q, param) in [
        ("contains=12a", "contains"),
        ("detached=false", "detached"),
        ("class=silver", "class"),
        ("sort=price", "sort"),
        ("sid=ABC", "sid"),
    ] {
        let (status, body) = send(app.req(&acct, Method::GET, &format!("/v2.0/numbers?{q}"))).await;
        assert_eq!(
            assert_error(status, &body, 400, "validation_error"),
            [param],
            "{q}"
        );
    }
    // Release: gone from the account, back in the store, did.unassigned emitted.
    let before = available(&app, &acct, "GB", "geographic", "+44113").await;
    let (status, _) =
        send(app.req(&acct, Method::DELETE, &format!("/v2.0/numbers/{}", geo[0]))).await;
    assert_eq!(status, 204);
    assert_eq!(
        available(&app, &acct, "GB", "geographic", "+44113").await,
        before + 1
    );
    let (_, all) = send(app.req(&acct, Method::GET, "/v2.0/numbers")).await;
    assert_eq!(all["total"], 2);
    let (status, body) =
        send(app.req(&acct, Method::GET, &format!("/v2.0/numbers/{}", geo[0]))).await;
    assert_error(status, &body, 404, "not_found");
    let unassigned = app.events(&acct.sid, "did.unassigned").await;
    assert_eq!(unassigned.len(), 1);
    assert_eq!(unassigned[0]["intl_number"], geo[0].as_str());
    assert_eq!(mobile.len(), 1);
    // The released number can be bought by someone else.
    let other = app.account().await;
    let got = reserve_and_buy(&app, &other, "country=GB&type=geographic&area=Leeds").await;
    assert_eq!(got, [geo[0].clone()]);
}

async fn end_users_in_use_cannot_be_deleted(app: TestApp) {
    let acct = app.account().await;
    let numbers = reserve_and_buy(&app, &acct, "country=FR&type=geographic").await;
    let (_, user) = send(
        app.req(&acct, Method::POST, "/v2.0/end-users")
            .json(&json!({"name": "Zoe"})),
    )
    .await;
    let user_sid = user["sid"].as_str().unwrap().to_owned();
    let (status, _) = send(app.req(
        &acct,
        Method::PUT,
        &format!("/v2.0/numbers/{}/enduser/{user_sid}", numbers[0]),
    ))
    .await;
    assert_eq!(status, 204);
    let (_, n) = send(app.req(&acct, Method::GET, &format!("/v2.0/numbers/{}", numbers[0]))).await;
    assert_eq!(n["endUser"], json!({"sid": user_sid, "name": "Zoe"}));
    let (status, body) = send(app.req(
        &acct,
        Method::DELETE,
        &format!("/v2.0/end-users/{user_sid}"),
    ))
    .await;
    assert_error(status, &body, 400, "end_user_in_use");
    let (status, _) =
        send(app.req(&acct, Method::GET, &format!("/v2.0/end-users/{user_sid}"))).await;
    assert_eq!(status, 200, "still there");
    let (status, _) = send(
        app.req(
            &acct,
            Method::PATCH,
            &format!("/v2.0/numbers/{}", numbers[0]),
        )
        .json(&json!({"endUser": null})),
    )
    .await;
    assert_eq!(status, 204);
    let (_, n) = send(app.req(&acct, Method::GET, &format!("/v2.0/numbers/{}", numbers[0]))).await;
    assert_eq!(n["endUser"], Value::Null);
    let (status, _) = send(app.req(
        &acct,
        Method::DELETE,
        &format!("/v2.0/end-users/{user_sid}"),
    ))
    .await;
    assert_eq!(status, 204);
    // Unknown targets and bad bodies.
    let (status, body) = send(
        app.req(
            &acct,
            Method::PATCH,
            &format!("/v2.0/numbers/{}", numbers[0]),
        )
        .json(&json!({"scenario": "abcdefgh"})),
    )
    .await;
    assert_error(status, &body, 404, "not_found");
    let (status, body) = send(
        app.req(
            &acct,
            Method::PATCH,
            &format!("/v2.0/numbers/{}", numbers[0]),
        )
        .json(&json!({"scenario": "BAD"})),
    )
    .await;
    assert_eq!(
        assert_error(status, &body, 400, "validation_error"),
        ["scenario"]
    );
    let (status, body) = send(
        app.req(
            &acct,
            Method::PATCH,
            &format!("/v2.0/numbers/{}", numbers[0]),
        )
        .json(&json!({"owner": "x"})),
    )
    .await;
    assert_eq!(
        assert_error(status, &body, 400, "validation_error"),
        ["owner"]
    );
    let (status, body) = send(app.req(
        &acct,
        Method::PUT,
        &format!("/v2.0/numbers/{}/enduser/abcdefgh", numbers[0]),
    ))
    .await;
    assert_error(status, &body, 404, "not_found");
}

async fn racing_accounts_and_nodes_never_share_a_number(app: TestApp) {
    // 24 accounts on two nodes race for the 100 numbers of +1201 in lots of 10.
    let (second, _) = app.second_node().await;
    let mut accounts = Vec::new();
    for _ in 0..24 {
        accounts.push(app.account().await);
    }
    let mut tasks = Vec::new();
    for (i, acct) in accounts.iter().enumerate() {
        let base = if i % 2 == 0 {
            app.base.clone()
        } else {
            second.clone()
        };
        let (client, key) = (app.client.clone(), acct.api_key.clone());
        tasks.push(tokio::spawn(async move {
            let r: Value = client
                .post(format!("{base}/v2.0/numbers/store?country=US&type=geographic&quantity=10&prefix=%2B1201"))
                .header("x-api-key", &key)
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            let Some(token) = r["token"].as_str() else {
                assert_eq!(r["code"], "number_not_available", "{r}");
                return Vec::new();
            };
            let bought: Value = client
                .post(format!("{base}/v2.0/numbers/store/{token}"))
                .header("x-api-key", &key)
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            bought["numbers"].as_array().unwrap().iter().map(|n| n["e164"].as_str().unwrap().to_owned()).collect::<Vec<_>>()
        }));
    }
    let mut all = Vec::new();
    let mut winners = 0;
    for t in tasks {
        let got = t.await.unwrap();
        if !got.is_empty() {
            assert_eq!(got.len(), 10);
            winners += 1;
        }
        all.extend(got);
    }
    let unique: HashSet<&String> = all.iter().collect();
    assert_eq!(unique.len(), all.len(), "a number was sold twice");
    assert_eq!(
        winners, 10,
        "exactly the 100 numbers were sold, in lots of 10"
    );
    assert!(all.iter().all(|n| n.starts_with("+1201")));
}

/// On PostgreSQL, another session moves the reservation of `token` to `status` (and frees
/// its numbers) while `request` is under way: the request reads the reservation held, then
/// waits on its row until that session commits. Gives the request's answer.
async fn raced_by_another_session(
    app: &TestApp,
    token: &str,
    status: &'static str,
    request: reqwest::RequestBuilder,
    waits_in: &'static str,
) -> (reqwest::StatusCode, Value) {
    let url = app.postgres_url().expect("a PostgreSQL app");
    let (locked_tx, locked_rx) = std::sync::mpsc::channel();
    let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
    let (u, t) = (url.clone(), token.to_owned());
    let other = std::thread::spawn(move || {
        let mut c = postgres::Client::connect(&u, postgres::NoTls).expect("connect");
        let mut tx = c.transaction().expect("begin");
        let n = tx
            .execute(
                "UPDATE reservations SET status = $2 WHERE token = $1 AND status = 'reserved'",
                &[&t, &status],
            )
            .expect("the other session's change");
        tx.execute(
            "UPDATE numbers SET reservation_id = NULL WHERE reservation_id = (SELECT id FROM reservations WHERE token = $1)",
            &[&t],
        )
        .expect("free the numbers");
        locked_tx.send(n).expect("tell");
        go_rx
            .recv_timeout(std::time::Duration::from_secs(60))
            .expect("told to commit");
        tx.commit().expect("commit");
    });
    assert_eq!(
        locked_rx.recv_timeout(std::time::Duration::from_secs(60)),
        Ok(1)
    );
    let raced = tokio::spawn(send(request));
    // Until the request waits on the reservation's row (at most a minute).
    let waiting = tokio::task::spawn_blocking(move || {
        let mut c = postgres::Client::connect(&url, postgres::NoTls).expect("connect");
        crate::helpers::until_waiting_for_a_lock(&mut c, &format!("{waits_in}%"))
    })
    .await
    .expect("join");
    assert!(waiting, "the request waits on the reservation's row");
    go_tx.send(()).expect("go");
    other.join().expect("the other session");
    raced.await.expect("the request")
}

/// PostgreSQL: a reservation cancelled by another session while its purchase is under way
/// (the purchase read it held and debited): the purchase is refused with
/// `reservation_expired`, debits nothing and gives no number; a cancel that an expiry
/// overtook the same way is told so instead of succeeding. (On SQLite one writer at a
/// time: no session can come in between.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reservation_changed_meanwhile_is_neither_bought_nor_cancelled() {
    let Some(app) = TestApp::spawn(Backend::Postgres).await else {
        crate::helpers::skip("set DIALTONE_TEST_DATABASE_URL to run this test on PostgreSQL");
        return;
    };
    let acct = app.account().await;
    let (status, r) = reserve(&app, &acct, "country=GB&type=mobile").await;
    assert_eq!(status, 200, "{r}");
    let token = r["token"].as_str().unwrap().to_owned();
    let buy = app.req(&acct, Method::POST, &format!("/v2.0/numbers/store/{token}"));
    let (status, body) = raced_by_another_session(
        &app,
        &token,
        "cancelled",
        buy,
        "UPDATE reservations SET status = 'bought'",
    )
    .await;
    assert_error(status, &body, 400, "reservation_expired");
    let (_, credit) = send(app.req(&acct, Method::GET, "/v2.0/billing/credit")).await;
    assert_eq!(credit["amount"], "100000.00", "nothing debited");
    let (_, list) = send(app.req(&acct, Method::GET, "/v2.0/numbers")).await;
    assert_eq!(list["total"], 0, "no number given");
    let (_, r) = send(app.req(&acct, Method::GET, &format!("/v2.0/numbers/store/{token}"))).await;
    assert_eq!(r["status"], "cancelled");

    let (status, r) = reserve(&app, &acct, "country=GB&type=mobile").await;
    assert_eq!(status, 200, "{r}");
    let token = r["token"].as_str().unwrap().to_owned();
    let cancel = app.req(
        &acct,
        Method::DELETE,
        &format!("/v2.0/numbers/store/{token}"),
    );
    let (status, body) = raced_by_another_session(
        &app,
        &token,
        "expired",
        cancel,
        "UPDATE reservations SET status = 'cancelled'",
    )
    .await;
    assert_error(status, &body, 400, "reservation_expired");
    assert!(
        body.to_string().contains("already expired"),
        "the answer says what happened: {body}"
    );
    let (_, r) = send(app.req(&acct, Method::GET, &format!("/v2.0/numbers/store/{token}"))).await;
    assert_eq!(r["status"], "expired");
}
