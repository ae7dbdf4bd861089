//! Retention: events with their deliveries and tries, finished runs and export files are
//! deleted once past their retention (30 days, 30 days, 24 hours by default); what is newer,
//! and runs still running, stay.

use reqwest::Method;
use serde_json::json;

use crate::both_backends;
use crate::helpers::{TestApp, send};
use crate::receiver::Receiver;

both_backends!(old_records_are_pruned_and_recent_ones_kept);

async fn count(app: &TestApp, sql: &'static str) -> i64 {
    app.state
        .store
        .read(move |c| c.query_one(sql, &[]))
        .await
        .expect("count")
        .int(0)
        .expect("int")
}

async fn old_records_are_pruned_and_recent_ones_kept(app: TestApp) {
    let acct = app.account().await;
    let receiver = Receiver::start().await;
    crate::webhooks::subscribe(&app, &acct, "billing.credit", &receiver.url, json!(null)).await;
    let top_up = || async {
        let (status, _) = send(
            app.admin(
                Method::POST,
                &format!("/admin/accounts/{}/credit", acct.sid),
            )
            .json(&json!({"amount": "1.00"})),
        )
        .await;
        assert!(status.is_success());
    };
    top_up().await;
    let done = crate::actions::scenario(
        &app,
        &acct,
        "branches:\n  api-initiated:\n    actions:\n      - action: log@v1\n        params: {message: hi}\n",
    )
    .await;
    let waiting = crate::actions::scenario(
        &app,
        &acct,
        "branches:\n  api-initiated:\n    actions:\n      - action: wait@v1\n        params: {seconds: 86400000}\n",
    )
    .await;
    for sid in [&done, &waiting] {
        let (status, _) =
            send(app.req(&acct, Method::POST, &format!("/v2.0/actions/{sid}/runs"))).await;
        assert_eq!(status, 202);
    }
    app.tick().await;
    assert_eq!(receiver.received().len(), 1);
    let (events, deliveries, runs) = (
        count(&app, "SELECT count(*) FROM events").await,
        count(&app, "SELECT count(*) FROM deliveries").await,
        count(&app, "SELECT count(*) FROM runs").await,
    );
    assert!(
        events >= 1 && deliveries == 1 && runs == 2,
        "{events} {deliveries} {runs}"
    );

    // 29 days later: nothing is old enough.
    app.clock.advance_ms(29 * 86_400_000);
    app.tick().await;
    assert_eq!(count(&app, "SELECT count(*) FROM deliveries").await, 1);
    // A newer event, then past 30 days for the first ones.
    top_up().await;
    app.tick().await;
    app.clock.advance_ms(2 * 86_400_000);
    app.tick().await;
    assert_eq!(
        count(&app, "SELECT count(*) FROM deliveries").await,
        1,
        "the first delivery went, the newer stays"
    );
    assert_eq!(
        count(&app, "SELECT count(*) FROM delivery_attempts").await,
        1,
        "its try went with it"
    );
    assert_eq!(
        count(&app, "SELECT count(*) FROM runs").await,
        1,
        "the finished run went, the running one stays"
    );
    let (_, run_list) =
        send(app.req(&acct, Method::GET, &format!("/v2.0/actions/{waiting}"))).await;
    assert!(run_list.is_object());
}
