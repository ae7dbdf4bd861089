//! Prepaid billing: the ledger, rates, thresholds, suspension, top-ups, monthly fees.

use std::sync::Arc;

use reqwest::Method;
use serde_json::{Value, json};

use crate::both_backends;
use crate::helpers::{TestAccount, TestApp, assert_error, send};
use crate::sms::send_sms;

both_backends!(
    destinations_and_rates,
    an_import_on_another_node_prices_the_next_sms,
    top_ups_emit_billing_credit,
    thresholds_warn_once_suspend_and_reactivate,
    the_ledger_holds_under_two_thousand_racing_sends,
    three_nodes_race_sends_against_a_low_balance,
    monthly_fees_on_the_contract_day,
    operators_suspend_and_reactivate,
);

async fn credit(app: &TestApp, acct: &TestAccount) -> String {
    let (_, c) = send(app.req(acct, Method::GET, "/v2.0/billing/credit")).await;
    c["amount"].as_str().unwrap_or_default().to_owned()
}

async fn account_row(app: &TestApp, sid: &str) -> dialtone_store::accounts::Account {
    let sid = dialtone_domain::Sid::parse(sid).unwrap();
    app.state
        .store
        .read(move |c| dialtone_store::accounts::by_sid(c, &sid))
        .await
        .unwrap()
        .unwrap()
}

async fn destinations_and_rates(app: TestApp) {
    let acct = app.account().await;
    let (status, list) = send(app.req(&acct, Method::GET, "/v2.0/billing/destinations")).await;
    assert_eq!(status, 200);
    let fr = list
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["label"] == "FR-MOBILE")
        .unwrap()
        .clone();
    assert_eq!(
        fr,
        json!({"label": "FR-MOBILE", "country": "FR", "type": "mobile", "prefixes": ["+336", "+337"],
               "smsPrice": "5.50", "callPricePerMinute": "12.00", "numberMonthlyPrice": "150.00", "currency": "EUR"})
    );
    // The operator reprices one prefix and adds a longer one: the longest prefix wins.
    let csv = "label,country,type,prefix,smsPrice,callPricePerMinute,numberMonthlyPrice\nFR-MOBILE,FR,mobile,+336,7.00,12.00,150.00\nFR-MOBILE-X,FR,mobile,+33612,9.25,12.00,150.00\n";
    let (status, r) = send(app.admin(Method::POST, "/admin/rates").body(csv)).await;
    assert_eq!(status, 200, "{r}");
    for (to, price) in [
        ("%2B33612345678", "9.25"),
        ("%2B33698765432", "7.00"),
        ("%2B33751234567", "5.50"),
        ("%2B61491570006", "5.00"),
    ] {
        let (_, sms) = send_sms(&app, &acct, &format!("to={to}"), json!({"body": "x"})).await;
        assert_eq!(sms["billingDebit"], price, "{to}");
    }
    let (status, r) = send(
        app.admin(Method::POST, "/admin/rates")
            .body("FR,FR,mobile,336,1,1,1\nX,FR,mobile,+33,-1,1,1"),
    )
    .await;
    let params = assert_error(status, &r, 400, "validation_error");
    assert_eq!(params, ["line 1", "line 2"]);
    let post = app
        .account_with(json!({"name": "big", "billingMode": "postpaid"}))
        .await;
    let (status, r) = send(app.req(&post, Method::GET, "/v2.0/billing/credit")).await;
    assert_error(status, &r, 403, "forbidden");
    let (status, _) = send_sms(
        &app,
        &post,
        "to=%2B33612345678",
        json!({"body": "postpaid can send"}),
    )
    .await;
    assert_eq!(status, 202);
    let rpc = crate::jsonrpc::rpc(&app, &acct, "billing.get_prepaid_credit", json!([])).await;
    assert_eq!(rpc["result"]["currency"], "EUR");
    assert_eq!(rpc["result"]["amount"], credit(&app, &acct).await.as_str());
}

/// Every node keeps the rates in memory: an import through one node prices the next SMS
/// another node takes, although that one had the table loaded before the import.
async fn an_import_on_another_node_prices_the_next_sms(app: TestApp) {
    let acct = app.account().await;
    let (status, sms) = send_sms(&app, &acct, "to=%2B33612345678", json!({"body": "x"})).await;
    assert_eq!(status, 202, "{sms}");
    assert_eq!(sms["billingDebit"], "5.50", "the default FR-MOBILE rate");
    let (other, _node) = app.second_node().await;
    let (status, r) = send(
        reqwest::Client::new()
            .post(format!("{other}/admin/rates"))
            .bearer_auth(crate::helpers::ADMIN_TOKEN)
            .body("FR-MOBILE,FR,mobile,+336,8.25,12.00,150.00\n"),
    )
    .await;
    assert_eq!(status, 200, "{r}");
    let (status, sms) = send_sms(&app, &acct, "to=%2B33612345678", json!({"body": "x"})).await;
    assert_eq!(status, 202, "{sms}");
    assert_eq!(sms["billingDebit"], "8.25", "priced at the imported rate");
    assert_eq!(credit(&app, &acct).await, "99986.25");
}

async fn top_ups_emit_billing_credit(app: TestApp) {
    let acct = app
        .account_with(json!({"name": "a", "credit": "10.00"}))
        .await;
    let (status, r) = send(
        app.admin(
            Method::POST,
            &format!("/admin/accounts/{}/credit", acct.sid),
        )
        .json(&json!({"amount": "2500.50"})),
    )
    .await;
    assert_eq!(status, 200, "{r}");
    assert_eq!(r["credit"], "2510.50");
    assert_eq!(credit(&app, &acct).await, "2510.50");
    let events = app.events(&acct.sid, "billing.credit").await;
    assert_eq!(
        events,
        [json!({"amount": "2510.50", "currency": "EUR", "threshold": null, "credited": "2500.50"})]
    );
    for bad in ["0", "-5.00", "lots"] {
        let (status, r) = send(
            app.admin(
                Method::POST,
                &format!("/admin/accounts/{}/credit", acct.sid),
            )
            .json(&json!({"amount": bad})),
        )
        .await;
        assert_eq!(
            assert_error(status, &r, 400, "validation_error"),
            ["amount"],
            "{bad}"
        );
    }
    let (status, r) = send(
        app.admin(Method::POST, "/admin/accounts/zzzzzzzz/credit")
            .json(&json!({"amount": "1.00"})),
    )
    .await;
    assert_error(status, &r, 404, "not_found");
    assert_eq!(credit(&app, &acct).await, "2510.50");
}

async fn thresholds_warn_once_suspend_and_reactivate(app: TestApp) {
    let acct = app
        .account_with(json!({"name": "a", "credit": "20.00"}))
        .await;
    let (status, r) = send(
        app.admin(Method::PATCH, &format!("/admin/accounts/{}", acct.sid))
            .json(&json!({"warningLevel": "15.00", "shutdownLevel": "5.00"})),
    )
    .await;
    assert_eq!(status, 200, "{r}");
    let gb = "to=%2B447700900555";
    let sms = || send_sms(&app, &acct, gb, json!({"body": "x"}));
    assert_eq!(sms().await.0, 202);
    assert!(
        app.events(&acct.sid, "billing.credit_warning")
            .await
            .is_empty(),
        "15.50 is above the warning level"
    );
    assert_eq!(sms().await.0, 202);
    let warnings = app.events(&acct.sid, "billing.credit_warning").await;
    assert_eq!(
        warnings,
        [json!({"amount": "11.00", "currency": "EUR", "threshold": "15.00"})]
    );
    assert_eq!(sms().await.0, 202);
    assert_eq!(
        app.events(&acct.sid, "billing.credit_warning").await.len(),
        1,
        "once per crossing"
    );
    assert!(
        app.events(&acct.sid, "billing.credit_shutdown")
            .await
            .is_empty()
    );
    assert_eq!(sms().await.0, 202);
    let shutdown = app.events(&acct.sid, "billing.credit_shutdown").await;
    assert_eq!(
        shutdown,
        [json!({"amount": "2.00", "currency": "EUR", "threshold": "5.00"})]
    );
    let (status, r) = sms().await;
    assert_error(status, &r, 403, "account_suspended");
    let (status, r) = send(app.req(
        &acct,
        Method::POST,
        "/v2.0/numbers/store?country=GB&type=mobile",
    ))
    .await;
    assert_error(status, &r, 403, "account_suspended");
    assert_eq!(credit(&app, &acct).await, "2.00", "reads still work");
    // A top-up above the shutdown level reactivates; still below warning: no new warning.
    send(
        app.admin(
            Method::POST,
            &format!("/admin/accounts/{}/credit", acct.sid),
        )
        .json(&json!({"amount": "10.00"})),
    )
    .await;
    assert_eq!(sms().await.0, 202);
    assert_eq!(
        app.events(&acct.sid, "billing.credit_warning").await.len(),
        1
    );
    // Back above the warning level, then below again: a second warning.
    send(
        app.admin(
            Method::POST,
            &format!("/admin/accounts/{}/credit", acct.sid),
        )
        .json(&json!({"amount": "20.00"})),
    )
    .await;
    assert_eq!(credit(&app, &acct).await, "27.50");
    assert_eq!(sms().await.0, 202);
    assert_eq!(sms().await.0, 202);
    assert_eq!(sms().await.0, 202);
    assert_eq!(
        app.events(&acct.sid, "billing.credit_warning").await.len(),
        2
    );
}

async fn the_ledger_holds_under_two_thousand_racing_sends(app: TestApp) {
    let acct = app
        .account_with(json!({"name": "race", "credit": "1000.00"}))
        .await;
    let limit = Arc::new(tokio::sync::Semaphore::new(64));
    let spawn_send = |limit: Arc<tokio::sync::Semaphore>| {
        let (client, url, key) = (
            app.client.clone(),
            app.url("/v2.0/sms?to=%2B447700900555"),
            acct.api_key.clone(),
        );
        tokio::spawn(async move {
            let _permit = limit.acquire_owned().await.unwrap();
            let r = client
                .post(url)
                .header("x-api-key", key)
                .json(&json!({"body": "race"}))
                .send()
                .await
                .unwrap();
            let status = r.status().as_u16();
            let body: Value = r.json().await.unwrap();
            (status, body["code"].as_str().unwrap_or_default().to_owned())
        })
    };
    // 700 sends race over 1000.00 (222 fit), then 1,300 more race with a top-up of 2000.00
    // (444 more fit). The top-up holds one of the 64 slots and is made as the second wave
    // starts, so however the tasks are scheduled far more than 444 sends come after it.
    let mut tasks: Vec<_> = (0..700).map(|_| spawn_send(limit.clone())).collect();
    let mut first_wave = Vec::new();
    for t in tasks.drain(..) {
        first_wave.push(t.await.unwrap());
    }
    let slot = limit.clone().acquire_owned().await.unwrap();
    tasks.extend((0..1300).map(|_| spawn_send(limit.clone())));
    let r = app
        .client
        .post(app.url(&format!("/admin/accounts/{}/credit", acct.sid)))
        .bearer_auth(crate::helpers::ADMIN_TOKEN)
        .json(&json!({"amount": "2000.00"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    drop(slot);
    let mut answers = first_wave;
    for t in tasks {
        answers.push(t.await.unwrap());
    }
    let mut accepted = 0i64;
    let mut refused: std::collections::BTreeMap<String, i64> = std::collections::BTreeMap::new();
    for answer in answers {
        match answer {
            (202, _) => accepted += 1,
            (403, code) => {
                assert!(
                    code == "insufficient_credit" || code == "account_suspended",
                    "{code}"
                );
                *refused.entry(code).or_default() += 1;
            }
            other => panic!("unexpected answer {other:?}"),
        }
    }
    let a = account_row(&app, &acct.sid).await;
    let id = a.id;
    let (sum, lowest) = app
        .state
        .store
        .read(move |c| {
            Ok::<_, dialtone_store::DbError>((
                dialtone_store::billing::ledger_sum(c, id)?,
                dialtone_store::billing::lowest_balance(c, id)?,
            ))
        })
        .await
        .unwrap();
    assert_eq!(sum, a.credit, "the balance is the sum of the ledger");
    assert!(
        lowest.unwrap() >= dialtone_domain::Money::ZERO,
        "never below zero"
    );
    let spent = dialtone_domain::Money::from_cents(3000)
        .checked_sub(a.credit)
        .unwrap();
    assert_eq!(
        spent,
        dialtone_domain::Money::parse_cents("4.50")
            .unwrap()
            .checked_mul(accepted)
            .unwrap(),
        "{accepted} accepted"
    );
    assert_eq!(
        accepted, 666,
        "3000.00 buys 666 SMS at 4.50 (refused: {refused:?})"
    );
}

/// Three nodes on one database take sends of one account as fast as they come, 96 at a time,
/// against a balance that covers 111 of 600: exactly 111 are accepted whichever node took
/// them, the balance never went below zero, and every debit is one ledger line whose
/// balances follow each other. (On PostgreSQL a batch's debits are settled at its end, and a
/// batch that finds the credit spent by another node runs its writes again one by one.)
async fn three_nodes_race_sends_against_a_low_balance(app: TestApp) {
    let acct = app
        .account_with(json!({"name": "race3", "credit": "500.00"}))
        .await;
    let (second, _node2) = app.second_node().await;
    let (third, _node3) = app.second_node().await;
    let bases = [app.base.clone(), second, third];
    let limit = Arc::new(tokio::sync::Semaphore::new(96));
    let mut tasks = Vec::new();
    for i in 0..600 {
        let (client, url, key, limit) = (
            app.client.clone(),
            format!("{}/v2.0/sms?to=%2B447700900555", bases[i % 3]),
            acct.api_key.clone(),
            limit.clone(),
        );
        tasks.push(tokio::spawn(async move {
            let _permit = limit.acquire_owned().await.unwrap();
            let r = client
                .post(url)
                .header("x-api-key", key)
                .json(&json!({"body": "race"}))
                .send()
                .await
                .unwrap();
            let status = r.status().as_u16();
            let body: Value = r.json().await.unwrap();
            (status, body["code"].as_str().unwrap_or_default().to_owned())
        }));
    }
    let mut accepted = 0i64;
    for t in tasks {
        match t.await.unwrap() {
            (202, _) => accepted += 1,
            (403, code) => assert_eq!(code, "insufficient_credit"),
            other => panic!("unexpected answer {other:?}"),
        }
    }
    assert_eq!(accepted, 111, "500.00 buys 111 SMS at 4.50");
    let a = account_row(&app, &acct.sid).await;
    assert_eq!(
        a.credit,
        dialtone_domain::Money::parse_cents("0.50").unwrap()
    );
    let id = a.id;
    let (sum, lowest, lines) = app
        .state
        .store
        .read(move |c| {
            let lines = c
                .query(
                    "SELECT amount, balance_after FROM ledger WHERE account_id = $1 AND kind = 'sms' ORDER BY balance_after DESC",
                    dialtone_store::params![id],
                )?
                .iter()
                .map(|r| Ok((r.int(0)?, r.int(1)?)))
                .collect::<Result<Vec<_>, dialtone_store::DbError>>()?;
            Ok::<_, dialtone_store::DbError>((
                dialtone_store::billing::ledger_sum(c, id)?,
                dialtone_store::billing::lowest_balance(c, id)?,
                lines,
            ))
        })
        .await
        .unwrap();
    assert_eq!(sum, a.credit, "the balance is the sum of the ledger");
    assert!(lowest.unwrap() >= dialtone_domain::Money::ZERO);
    assert_eq!(lines.len(), 111, "one ledger line per accepted SMS");
    // The lines' balances step down by the price from the opening credit: no two debits
    // saw the same balance.
    for (i, (amount, balance)) in lines.iter().enumerate() {
        assert_eq!(*amount, -450, "line {i}");
        assert_eq!(*balance, 50_000 - 450 * (i as i64 + 1), "line {i}");
    }
}

async fn monthly_fees_on_the_contract_day(app: TestApp) {
    let acct = app
        .account_with(json!({"name": "fees", "credit": "700.00"}))
        .await;
    let (_, r) = send(app.req(
        &acct,
        Method::POST,
        "/v2.0/numbers/store?country=GB&type=geographic&quantity=2",
    ))
    .await;
    let (status, b) = send(app.req(
        &acct,
        Method::POST,
        &format!("/v2.0/numbers/store/{}", r["token"].as_str().unwrap()),
    ))
    .await;
    assert_eq!(status, 200, "{b}");
    assert_eq!(
        credit(&app, &acct).await,
        "300.00",
        "setup and first month: 2 x (100 + 100)"
    );
    // 2025-06-01 + 1 month = 2025-07-01.
    app.clock.advance_ms(29 * 86_400_000);
    app.tick().await;
    assert_eq!(credit(&app, &acct).await, "300.00", "not yet");
    app.clock.advance_ms(86_400_000);
    app.tick().await;
    assert_eq!(credit(&app, &acct).await, "100.00", "two monthly fees");
    app.tick().await;
    assert_eq!(credit(&app, &acct).await, "100.00", "once per contract day");
    // 2025-08-01: one fee can be paid, the other cannot: that number is released.
    app.clock.advance_ms(31 * 86_400_000);
    app.tick().await;
    assert_eq!(credit(&app, &acct).await, "0.00");
    let (_, list) = send(app.req(&acct, Method::GET, "/v2.0/numbers")).await;
    assert_eq!(list["total"], 1);
    assert_eq!(app.events(&acct.sid, "did.unassigned").await.len(), 1);
}

async fn operators_suspend_and_reactivate(app: TestApp) {
    let acct = app.account().await;
    let number = crate::sms::buy(&app, &acct, "country=GB&type=mobile").await;
    let scenario = crate::actions::scenario(
        &app,
        &acct,
        "branches:\n  api-initiated:\n    actions:\n      - action: log@v1\n        params: {message: hi}\n",
    )
    .await;
    let path = format!("/admin/accounts/{}", acct.sid);
    let (status, r) = send(
        app.admin(Method::PATCH, &path)
            .json(&json!({"status": "suspended"})),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(r["status"], "suspended");
    let (status, r) = send_sms(&app, &acct, "to=%2B33612345678", json!({"body": "x"})).await;
    assert_error(status, &r, 403, "account_suspended");
    let (status, _) = send(app.req(&acct, Method::GET, "/v2.0/numbers")).await;
    assert_eq!(status, 200, "reads work");
    // Runs and calls spend too.
    let (status, r) = send(app.req(
        &acct,
        Method::POST,
        &format!("/v2.0/actions/{scenario}/runs"),
    ))
    .await;
    assert_error(status, &r, 403, "account_suspended");
    let rpc = crate::jsonrpc::rpc(
        &app,
        &acct,
        "actions.start",
        json!([scenario.to_uppercase(), null]),
    )
    .await;
    assert_eq!(rpc["error"]["code"], 100, "{rpc}");
    let (status, r) = send(
        app.req(&acct, Method::POST, "/sandbox/calls")
            .json(&json!({"from": "+447700900999", "to": number})),
    )
    .await;
    assert_error(status, &r, 403, "account_suspended");
    // A top-up does not lift an operator's suspension.
    send(
        app.admin(Method::POST, &format!("{path}/credit"))
            .json(&json!({"amount": "1.00"})),
    )
    .await;
    let (status, _) = send_sms(&app, &acct, "to=%2B33612345678", json!({"body": "x"})).await;
    assert_eq!(status, 403);
    let (status, r) = send(
        app.admin(Method::PATCH, &path)
            .json(&json!({"status": "active"})),
    )
    .await;
    assert_eq!(
        (status.as_u16(), r["status"].as_str()),
        (200, Some("active"))
    );
    let (status, _) = send_sms(&app, &acct, "to=%2B33612345678", json!({"body": "x"})).await;
    assert_eq!(status, 202);
    let (status, r) = send(
        app.admin(Method::PATCH, &path)
            .json(&json!({"status": "frozen"})),
    )
    .await;
    assert_eq!(
        assert_error(status, &r, 400, "validation_error"),
        ["status"]
    );
}
