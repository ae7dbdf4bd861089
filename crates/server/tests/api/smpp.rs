//! SMS through an SMPP connector to the test SMSC (crates/carrier/tests/smsc, on the smpp34
//! package) on loopback: statuses from submit_sm_resp and receipts, multi-part, refusals,
//! inbound SMS, and SMS kept in the database while the bind is down.

#[path = "../../../carrier/tests/smsc/mod.rs"]
pub(crate) mod smsc;

use std::time::Duration;

use dialtone_carrier::smpp::SmppConfig;
use reqwest::Method;
use serde_json::{Value, json};
use smsc::{TestSmsc, WAIT};

use crate::helpers::{Backend, TestAccount, TestApp, send};
use crate::sms::{buy, send_sms};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn smpp_sqlite() {
    sms_through_smpp(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn smpp_postgres() {
    sms_through_smpp(Backend::Postgres).await;
}

pub(crate) fn connector(port: u16) -> SmppConfig {
    let mut c = SmppConfig::new("operator", "127.0.0.1", port, "dialtone", "secret");
    c.prefixes = vec!["+33".into()];
    c.throughput = 0;
    c.response_timeout_ms = 3_000;
    c.reconnect_min_ms = 50;
    c.reconnect_max_ms = 200;
    c
}

pub(crate) async fn fetch(app: &TestApp, acct: &TestAccount, sid: &str) -> Value {
    let (status, sms) = send(app.req(acct, Method::GET, &format!("/v2.0/sms/{sid}"))).await;
    assert_eq!(status, 200, "{sms}");
    sms
}

/// Polls until the SMS has `status` (receipts arrive when the SMSC sends them), the
/// workers ticking meanwhile (a receipt kept before its part was committed is matched
/// there); bounded.
pub(crate) async fn until_status(
    app: &TestApp,
    acct: &TestAccount,
    sid: &str,
    status: &str,
) -> Value {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        app.tick_detached().await;
        let sms = fetch(app, acct, sid).await;
        if sms["status"] == status {
            return sms;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{sid} never became {status}: {sms}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

pub(crate) async fn submit(app: &TestApp, acct: &TestAccount, to: &str, body: &str) -> String {
    let to = to.replace('+', "%2B");
    let (status, sms) = send_sms(app, acct, &format!("to={to}"), json!({"body": body})).await;
    assert_eq!(status, 202, "{sms}");
    sms["sid"].as_str().unwrap().to_owned()
}

/// The text of a GSM short message whose characters are all ASCII letters and punctuation
/// that GSM 03.38 codes alike.
fn hex_text(hex: &str) -> String {
    (0..hex.len() / 2)
        .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).map_or('?', char::from))
        .collect()
}

async fn sms_through_smpp(backend: Backend) {
    let Some(mut smsc) = TestSmsc::start("sms_through_smpp").await else {
        return;
    };
    let port = smsc.port;
    let Some(app) = TestApp::spawn_with(backend, |c| c.smpp = vec![connector(port)]).await else {
        crate::helpers::skip("set DIALTONE_TEST_DATABASE_URL to run this test on PostgreSQL");
        return;
    };
    let connector = app
        .state
        .networks
        .connector("operator")
        .expect("configured");
    assert!(connector.wait_bound(WAIT).await);
    let acct = app.account().await;
    // Its events are recorded while a console feed watches (nobody subscribes).
    app.watch_feed(&acct.sid).await;

    // One part: pending and sent on submit_sm_resp, then the receipts.
    let sid = submit(&app, &acct, "+33600000000", "Hello over SMPP").await;
    app.tick().await;
    let sms = fetch(&app, &acct, &sid).await;
    // Sent on submit_sm_resp; the receipts may have followed already.
    assert_ne!(sms["status"], "created", "{sms}");
    assert!(sms["sentAt"].is_string());
    let seen = smsc.expect("submit").await;
    assert_eq!(
        (seen["dest"].as_str(), seen["dc"].as_u64()),
        (Some("33600000000"), Some(0))
    );
    until_status(&app, &acct, &sid, "delivered").await;
    let events = app.events(&acct.sid, "sms.mt.status_update").await;
    let statuses: Vec<&str> = events
        .iter()
        .map(|e| e["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, ["PENDING", "SENT", "REMOTE_QUEUED", "DELIVERED"]);

    // Two parts, receipts written in hexadecimal: delivered when both parts are.
    let long = "Multi-part message over SMPP. ".repeat(7);
    let sid = submit(&app, &acct, "+33600000002", &long).await;
    app.tick().await;
    assert_eq!(fetch(&app, &acct, &sid).await["parts"], 2);
    until_status(&app, &acct, &sid, "delivered").await;

    // A failed receipt, an expired one, and a permanent refusal (refunded).
    let failed = submit(&app, &acct, "+33600000001", "fails").await;
    let expired = submit(&app, &acct, "+33600000003", "expires").await;
    let refused = submit(&app, &acct, "+33600000005", "refused").await;
    app.tick().await;
    let sms = until_status(&app, &acct, &failed, "failed").await;
    assert_eq!(sms["statusError"], "UNDELIV err:001");
    until_status(&app, &acct, &expired, "expired").await;
    let sms = fetch(&app, &acct, &refused).await;
    assert_eq!(sms["status"], "error");
    assert!(
        sms["statusError"].as_str().unwrap().contains("0x0000000b"),
        "{sms}"
    );

    // Other destinations stay on the simulated network.
    let sim = submit(&app, &acct, "+447700900123", "simulated").await;
    app.tick().await;
    assert_eq!(fetch(&app, &acct, &sim).await["status"], "pending");

    // Inbound: a two-part SMS to the account's number: stored as received, sms.mo, and the
    // attached scenario's reply leaves through the connector (+33 is routed there).
    let number = buy(&app, &acct, "country=GB&type=mobile").await;
    let reply = "branches:\n  inbound-sms:\n    actions:\n      - action: sms@v1\n        params: {to: [\"${{ sms.fromNumber }}\"], body: \"Thanks: ${{ sms.bodyText }}\"}\n";
    let scenario = crate::actions::scenario(&app, &acct, reply).await;
    let (status, _) = send(app.req(
        &acct,
        Method::PUT,
        &format!("/v2.0/numbers/{number}/scenario/{scenario}"),
    ))
    .await;
    assert!(status.is_success());
    smsc.send(json!({"cmd": "mo", "from": "+33612345670", "to": number,
        "text": "Bonjour from the network", "parts": 2}))
        .await;
    for _ in 0..2 {
        assert_eq!(smsc.expect("mo-part").await["status"], 0);
    }
    let mo = app.events(&acct.sid, "sms.mo").await;
    assert_eq!(mo.len(), 1, "stored before the last part was acknowledged");
    assert_eq!(mo[0]["text"], "Bonjour from the network");
    assert_eq!(mo[0]["from"], "+33612345670");
    app.tick().await; // the scenario runs and sends its reply
    app.tick().await; // the reply is submitted
    let submitted = loop {
        let s = smsc.expect("submit").await;
        if s["dest"] == "33612345670" {
            break s;
        }
    };
    let text = hex_text(submitted["sm"].as_str().unwrap());
    assert_eq!(text, "Thanks: Bonjour from the network");
    assert_eq!(
        submitted["src"], "447700900000",
        "no FR number on the account: the shared sender"
    );

    // Bind down: the SMS waits in the database, then leaves once bound again.
    smsc.kill().await;
    let deadline = tokio::time::Instant::now() + WAIT;
    while connector.is_bound() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the drop is noticed"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let waiting = submit(&app, &acct, "+33600000007", "while the bind is down").await;
    app.tick().await;
    let sms = fetch(&app, &acct, &waiting).await;
    assert_eq!(
        sms["status"], "pending",
        "handed to the network, kept while it is down"
    );
    let Some(_again) = TestSmsc::start_on("sms_through_smpp", port).await else {
        return;
    };
    assert!(connector.wait_bound(WAIT).await);
    app.clock.advance_ms(10_001);
    app.tick().await;
    assert_eq!(fetch(&app, &acct, &waiting).await["status"], "sent");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connectors_through_admin() {
    let Some(mut smsc) = TestSmsc::start("connectors_through_admin").await else {
        return;
    };
    let Some(app) = TestApp::spawn(Backend::Sqlite).await else {
        return;
    };
    let (status, list) = send(app.admin(Method::GET, "/admin/smpp")).await;
    assert_eq!(
        (status.as_u16(), list),
        (200, json!([])),
        "none: the simulated network"
    );
    let mut body = serde_json::to_value(connector(smsc.port)).unwrap();
    body["default"] = json!(true);
    body["prefixes"] = json!([]);
    let (status, made) = send(app.admin(Method::POST, "/admin/smpp").json(&body)).await;
    assert_eq!(status, 201, "{made}");
    assert_eq!(made["name"], "operator");
    assert_eq!(made["source"], "admin");
    assert!(made.get("password").is_none(), "{made}");
    let (status, again) = send(app.admin(Method::POST, "/admin/smpp").json(&body)).await;
    assert_eq!(status, 400, "{again}");
    let mut bad = body.clone();
    bad["name"] = json!("other");
    bad["window"] = json!(0);
    let (status, _) = send(app.admin(Method::POST, "/admin/smpp").json(&bad)).await;
    assert_eq!(status, 400);
    let connector = app.state.networks.connector("operator").expect("started");
    assert!(connector.wait_bound(WAIT).await);
    let (_, list) = send(app.admin(Method::GET, "/admin/smpp")).await;
    assert_eq!(list[0]["bound"], true, "{list}");

    // The default connector now carries every destination.
    let acct = app.account().await;
    let sid = submit(&app, &acct, "+447700900127", "via the default connector").await;
    app.tick().await;
    assert_eq!(fetch(&app, &acct, &sid).await["status"], "sent");
    assert_eq!(smsc.expect("submit").await["dest"], "447700900127");

    let (status, _) = send(app.admin(Method::DELETE, "/admin/smpp/operator")).await;
    assert_eq!(status, 204);
    let (status, _) = send(app.admin(Method::DELETE, "/admin/smpp/operator")).await;
    assert_eq!(status, 404);
    let sid = submit(&app, &acct, "+447700900128", "simulated again").await;
    app.tick().await;
    assert_eq!(fetch(&app, &acct, &sid).await["status"], "pending");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inbound_parts_survive_a_node_sqlite() {
    let app = TestApp::spawn(Backend::Sqlite).await.expect("sqlite app");
    inbound_parts_survive_a_node(app).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inbound_parts_survive_a_node_postgres() {
    let Some(app) = TestApp::spawn(Backend::Postgres).await else {
        crate::helpers::skip("set DIALTONE_TEST_DATABASE_URL to run this test on PostgreSQL");
        return;
    };
    inbound_parts_survive_a_node(app).await;
}

/// The parts of a concatenated inbound SMS are stored as they come (each acknowledged to the
/// SMSC only then), so a part that arrived through one node completes with a part that
/// arrives through another, after the first is gone; a part delivered twice counts once.
async fn inbound_parts_survive_a_node(app: TestApp) {
    use dialtone::testing::handle;
    use dialtone_carrier::smpp::text::PartOf;
    use dialtone_carrier::smpp::{Ack, CarrierEvent};

    let acct = app.account().await;
    let number = buy(&app, &acct, "country=GB&type=mobile").await;
    let part = |seq: u8, text: &str| CarrierEvent::Inbound {
        connector: "operator-a".to_owned(),
        from: "+33612345678".to_owned(),
        to: number.clone(),
        text: text.to_owned(),
        part: Some(PartOf {
            reference: 42,
            total: 3,
            seq,
        }),
        ack: Ack::default(),
    };
    // Its events are recorded while a console feed watches (nobody subscribes).
    app.watch_feed(&acct.sid).await;
    // Parts 3 and 1 through this node (part 1 twice: the SMSC delivered it again).
    handle(&app.state, part(3, " parts")).await;
    handle(&app.state, part(1, "In three")).await;
    handle(&app.state, part(1, "In three")).await;
    assert!(inbound_sms(&app, &acct).await.is_empty(), "not whole yet");
    // The last part through another node.
    let (_, other) = app.second_node().await;
    handle(&other, part(2, " separate")).await;
    let got = inbound_sms(&app, &acct).await;
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0]["body"], "In three separate parts");
    assert_eq!(got[0]["from"], "+33612345678");
    assert_eq!(app.events(&acct.sid, "sms.mo").await.len(), 1);
    // Nothing is left waiting; the same reference may start a new message.
    let left = app
        .state
        .store
        .read(|c| c.query_one("SELECT COUNT(*) FROM inbound_parts", &[]))
        .await
        .unwrap()
        .int(0)
        .unwrap();
    assert_eq!(left, 0);
}

async fn inbound_sms(app: &TestApp, acct: &TestAccount) -> Vec<Value> {
    let (_, list) = send(app.req(
        acct,
        Method::GET,
        "/v2.0/sms?direction=inbound&createdAfter=2000-01-01T00:00:00Z&createdBefore=2100-01-01T00:00:00Z",
    ))
    .await;
    list["hits"].as_array().cloned().unwrap_or_default()
}
