//! Actions scenarios: CRUD and validation, runs (API, inbound SMS, inbound calls), calls on
//! the simulated network with their CDR, events, billing and recordings.

use reqwest::Method;
use serde_json::{Value, json};

use crate::both_backends;
use crate::helpers::{TestAccount, TestApp, assert_error, send};
use crate::receiver::Receiver;
use crate::sms::buy;

both_backends!(
    scenarios_are_validated_with_line_and_column,
    scenario_crud_search_and_attachments,
    an_api_run_computes_sends_sms_and_fetches,
    runs_start_from_the_scenario_as_stored_now,
    a_waiting_run_survives_a_restart_and_can_be_stopped,
    a_run_whose_stored_waits_are_unreadable_fails_instead_of_hanging,
    an_inbound_sms_runs_the_attached_scenario,
    an_inbound_call_follows_the_ivr_and_leaves_cdrs,
    calls_to_detached_numbers_are_declined,
    gather_times_out_and_voicemail_records_real_audio,
    the_api_hangs_up_live_calls_only,
    transparent_forwarding_answers_on_the_target_and_pushes_the_final_cdr,
    a_dial_rings_its_targets_in_turn_until_one_answers,
);

async fn create(
    app: &TestApp,
    acct: &TestAccount,
    name: &str,
    script: &str,
) -> (reqwest::StatusCode, Value) {
    send(
        app.req(acct, Method::POST, "/v2.0/actions")
            .json(&json!({"name": name, "script": script})),
    )
    .await
}

pub(crate) async fn scenario(app: &TestApp, acct: &TestAccount, script: &str) -> String {
    let (status, s) = create(app, acct, "test", script).await;
    assert_eq!(status, 201, "{s}");
    s["sid"].as_str().unwrap().to_owned()
}

/// Polls a run until it is no longer running (bounded).
async fn finished_run(app: &TestApp, acct: &TestAccount, sid: &str, run: &str) -> Value {
    for _ in 0..500 {
        let (status, r) = send(app.req(
            acct,
            Method::GET,
            &format!("/v2.0/actions/{sid}/runs/{run}"),
        ))
        .await;
        assert_eq!(status, 200, "{r}");
        if r["status"] != "running" {
            return r;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    panic!("the run did not finish");
}

/// `$v = 'value'` on the `api-initiated` branch.
fn sets(value: &str) -> String {
    format!(
        "branches:\n  api-initiated:\n    actions:\n      - action: javascript@v1\n        params: {{ code: \"$v = '{value}'\" }}\n"
    )
}

/// A node keeps the scenarios it read and starts runs without reading them again: a change
/// or a deletion made through another node (another process on the same database) must
/// still hold from this node's next run.
async fn runs_start_from_the_scenario_as_stored_now(app: TestApp) {
    let acct = app.account().await;
    let sid = scenario(&app, &acct, &sets("one")).await;
    let start = || async {
        let (status, started) =
            send(app.req(&acct, Method::POST, &format!("/v2.0/actions/{sid}/runs"))).await;
        assert_eq!(status, 202, "{started}");
        let run = started["runId"].as_str().unwrap().to_owned();
        let r = finished_run(&app, &acct, &sid, &run).await;
        assert_eq!(r["status"], "completed", "{r}");
        r["variables"]["$v"].clone()
    };
    assert_eq!(start().await, "one");
    assert_eq!(start().await, "one");
    let (other, _node) = app.second_node().await;
    let there = |method: Method, path: &str| {
        app.client
            .request(method, format!("{other}{path}"))
            .header("x-api-key", &acct.api_key)
    };
    let (status, body) = send(
        there(Method::PATCH, &format!("/v2.0/actions/{sid}")).json(&json!({"script": sets("two")})),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(start().await, "two");
    let (status, body) = send(
        there(Method::PATCH, &format!("/v2.0/actions/{sid}")).json(&json!({"name": "renamed"})),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(start().await, "two");
    let (status, _) = send(there(Method::DELETE, &format!("/v2.0/actions/{sid}"))).await;
    assert_eq!(status, 204);
    let (status, body) =
        send(app.req(&acct, Method::POST, &format!("/v2.0/actions/{sid}/runs"))).await;
    assert_error(status, &body, 404, "not_found");
}

async fn scenarios_are_validated_with_line_and_column(app: TestApp) {
    let acct = app.account().await;
    let cases = [
        (
            "branches:\n  api-initiated:\n    actions:\n      - action: say@v2\n        params: {what: [unclosed\n",
            "yaml",
        ),
        (
            "branches:\n  api-initiated:\n    actions:\n      - action: nosuch@v1\n",
            "unknown action",
        ),
        (
            "branches:\n  api-initiated:\n    actions:\n      - action: say@v9\n        params: {what: hi}\n",
            "unknown version",
        ),
        (
            "branches:\n  api-initiated:\n    actions:\n      - if: \"true\"\n        goto: {branch: missing}\n",
            "missing branch",
        ),
        (
            "branches:\n  api-initiated:\n    actions:\n      - action: log@v1\n        params: {message: \"${{ 1 + }}\"}\n",
            "bad expression",
        ),
        ("nonsense: 1\nbranches: {}\n", "unknown key"),
        (
            "branches:\n  api-initiated:\n    actions:\n      - action: gather@v2\n        params: {maxDigits: \"x\"}\n",
            "bad params",
        ),
    ];
    for (script, why) in cases {
        let (status, body) = create(&app, &acct, "bad", script).await;
        assert_error(status, &body, 400, "invalid_scenario");
        let d = &body["details"][0];
        assert!(d["line"].as_u64().unwrap() >= 1, "{why}: {body}");
        assert!(d["column"].as_u64().unwrap() >= 1, "{why}: {body}");
    }
    let (status, body) = create(
        &app,
        &acct,
        "bad",
        "branches:\n  api-initiated:\n    actions:\n      - action: nosuch@v1\n",
    )
    .await;
    assert_error(status, &body, 400, "invalid_scenario");
    assert_eq!(body["details"][0]["line"], 4, "{body}");
    let (status, body) = create(&app, &acct, &"n".repeat(65), "branches: {}\n").await;
    assert_error(status, &body, 400, "validation_error");
    let (status, body) = send(
        app.req(&acct, Method::POST, "/v2.0/actions")
            .json(&json!({"name": "x", "script": "branches: {}", "extra": 1})),
    )
    .await;
    assert_error(status, &body, 400, "validation_error");
    let (_, list) = send(app.req(&acct, Method::GET, "/v2.0/actions")).await;
    assert_eq!(list["total"], 0, "nothing was stored");
    let (status, schema) = send(app.req(&acct, Method::GET, "/v2.0/actions/schema.json")).await;
    assert_eq!(status, 200);
    assert!(
        schema["$schema"]
            .as_str()
            .unwrap()
            .contains("json-schema.org"),
        "{schema}"
    );
}

async fn scenario_crud_search_and_attachments(app: TestApp) {
    let acct = app.account().await;
    let other = app.account().await;
    let script = "branches:\n  inbound-call:\n    actions:\n      - action: say@v2\n        params: {what: hello}\n";
    let (status, a) = create(&app, &acct, "Sales line", script).await;
    assert_eq!(status, 201, "{a}");
    assert_eq!(a["format"], "yaml");
    assert_eq!(a["version"], "1.0");
    assert_eq!(a["script"], script);
    let sid = a["sid"].as_str().unwrap().to_owned();
    app.clock.advance_ms(1000);
    let (_, _b) = create(&app, &acct, "Support", script).await;
    let (_, found) = send(app.req(&acct, Method::GET, "/v2.0/actions?name=sales")).await;
    assert_eq!(found["total"], 1, "{found}");
    let (_, sorted) = send(app.req(&acct, Method::GET, "/v2.0/actions?sort=name&order=asc")).await;
    assert_eq!(sorted["hits"][0]["name"], "Sales line");
    let (_, by_updated) = send(app.req(&acct, Method::GET, "/v2.0/actions")).await;
    assert_eq!(
        by_updated["hits"][0]["name"], "Support",
        "default sort is updated desc"
    );
    let (status, body) = send(app.req(
        &acct,
        Method::GET,
        &format!("/v2.0/actions?name={}", "x".repeat(65)),
    ))
    .await;
    assert_error(status, &body, 400, "validation_error");
    // Bad PATCH changes nothing; a good one changes the script.
    let (status, body) = send(
        app.req(&acct, Method::PATCH, &format!("/v2.0/actions/{sid}"))
            .json(&json!({"script": "branches: ["})),
    )
    .await;
    assert_error(status, &body, 400, "invalid_scenario");
    let (_, same) = send(app.req(&acct, Method::GET, &format!("/v2.0/actions/{sid}"))).await;
    assert_eq!(same["script"], script);
    let (status, renamed) = send(
        app.req(&acct, Method::PATCH, &format!("/v2.0/actions/{sid}"))
            .json(&json!({"name": "Sales"})),
    )
    .await;
    assert_eq!(status, 200, "{renamed}");
    assert_eq!(renamed["name"], "Sales");
    // Attach through /actions, see it on both sides, detach, attach again, delete.
    let number = buy(&app, &acct, "country=GB&type=mobile").await;
    let (status, _) = send(app.req(
        &acct,
        Method::PUT,
        &format!("/v2.0/actions/{sid}/numbers/{number}"),
    ))
    .await;
    assert_eq!(status, 204);
    let (_, s) = send(app.req(&acct, Method::GET, &format!("/v2.0/actions/{sid}"))).await;
    assert_eq!(s["numbers"][0]["e164"], number.as_str(), "{s}");
    let (_, n) = send(app.req(&acct, Method::GET, &format!("/v2.0/numbers/{number}"))).await;
    assert_eq!(n["scenario"]["sid"], sid.as_str(), "{n}");
    let (status, _) = send(app.req(
        &acct,
        Method::DELETE,
        &format!("/v2.0/actions/{sid}/numbers/{number}"),
    ))
    .await;
    assert_eq!(status, 204);
    let (status, body) = send(app.req(
        &acct,
        Method::DELETE,
        &format!("/v2.0/actions/{sid}/numbers/{number}"),
    ))
    .await;
    assert_error(status, &body, 404, "not_found");
    send(app.req(
        &acct,
        Method::PUT,
        &format!("/v2.0/actions/{sid}/numbers/{number}"),
    ))
    .await;
    // Another account sees nothing.
    for (method, path) in [
        (Method::GET, format!("/v2.0/actions/{sid}")),
        (Method::PATCH, format!("/v2.0/actions/{sid}")),
        (Method::DELETE, format!("/v2.0/actions/{sid}")),
        (Method::POST, format!("/v2.0/actions/{sid}/runs")),
        (Method::PUT, format!("/v2.0/actions/{sid}/numbers/{number}")),
    ] {
        let (status, body) = send(app.req(&other, method, &path).json(&json!({"name": "x"}))).await;
        assert_eq!(status, 404, "{path}: {body}");
    }
    let (status, _) = send(app.req(&acct, Method::DELETE, &format!("/v2.0/actions/{sid}"))).await;
    assert_eq!(status, 204);
    let (status, _) = send(app.req(&acct, Method::GET, &format!("/v2.0/actions/{sid}"))).await;
    assert_eq!(status, 404);
    let (_, n) = send(app.req(&acct, Method::GET, &format!("/v2.0/numbers/{number}"))).await;
    assert!(
        n["scenario"].is_null(),
        "deleting the scenario detached the number: {n}"
    );
}

async fn an_api_run_computes_sends_sms_and_fetches(app: TestApp) {
    let acct = app.account().await;
    let receiver = Receiver::start().await;
    let script = format!(
        r#"variables:
  $to: "+447700900555"
  $count: 1
branches:
  api-initiated:
    actions:
      - action: javascript@v1
        params: {{ code: "$count = $count + 41; $greeting = 'hi ' + $name" }}
      - action: sms@v1
        params: {{ to: ["${{{{ $to }}}}"], body: "${{{{ $greeting }}}} (${{{{ $count }}}})" }}
        result: $sent
      - action: fetch@v2
        params: {{ url: "{url}", method: POST, body: "${{{{ JSON.stringify({{run: run.type, count: $count}}) }}}}" }}
        result: $api
      - if: "$api.ok"
        then:
          - action: log@v1
            params: {{ message: "fetched ${{{{ $api.status }}}}" }}
"#,
        url = receiver.url
    );
    let sid = scenario(&app, &acct, &script).await;
    let (status, started) = send(
        app.req(&acct, Method::POST, &format!("/v2.0/actions/{sid}/runs"))
            .json(&json!({"variables": {"$name": "Ada"}})),
    )
    .await;
    assert_eq!(status, 202, "{started}");
    assert_eq!(started["status"], "running");
    assert_eq!(started["scenario"], sid.as_str());
    let run = started["runId"].as_str().unwrap();
    let r = finished_run(&app, &acct, &sid, run).await;
    assert_eq!(r["status"], "completed", "{r}");
    assert_eq!(r["type"], "api");
    assert_eq!(r["variables"]["$count"], 42, "{r}");
    assert_eq!(r["variables"]["$api"]["status"], 200, "{r}");
    assert_eq!(r["variables"]["$sent"]["ok"], true, "{r}");
    assert!(
        r["log"]
            .as_array()
            .unwrap()
            .iter()
            .any(|l| l["message"] == "fetched 200"),
        "{r}"
    );
    // The SMS went through the same path as POST /sms (stored, billed).
    let sms_sid = r["variables"]["$sent"]["sids"][0].as_str().unwrap();
    let (status, sms) = send(app.req(&acct, Method::GET, &format!("/v2.0/sms/{sms_sid}"))).await;
    assert_eq!(status, 200, "{sms}");
    assert_eq!(sms["body"], "hi Ada (42)");
    assert_eq!(sms["to"], "+447700900555");
    // The fetch reached a real HTTP server.
    let got = receiver.received();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].json, json!({"run": "api", "count": 42}));
    // Bad input.
    let (status, body) = send(
        app.req(&acct, Method::POST, &format!("/v2.0/actions/{sid}/runs"))
            .json(&json!({"variables": {"name": 1}})),
    )
    .await;
    assert_error(status, &body, 400, "validation_error");
    let (status, _) = send(app.req(
        &acct,
        Method::GET,
        &format!("/v2.0/actions/{sid}/runs/zzzzzzzz"),
    ))
    .await;
    assert_eq!(status, 404);
}

async fn a_waiting_run_survives_a_restart_and_can_be_stopped(app: TestApp) {
    let acct = app.account().await;
    let sid = scenario(&app, &acct, "branches:\n  api-initiated:\n    actions:\n      - action: wait@v1\n        params: {seconds: 60}\n      - action: javascript@v1\n        params: {code: \"$done = true\"}\n").await;
    let (_, started) =
        send(app.req(&acct, Method::POST, &format!("/v2.0/actions/{sid}/runs"))).await;
    let run = started["runId"].as_str().unwrap().to_owned();
    let (_, second) =
        send(app.req(&acct, Method::POST, &format!("/v2.0/actions/{sid}/runs"))).await;
    let run2 = second["runId"].as_str().unwrap().to_owned();
    let (status, _) = send(app.req(
        &acct,
        Method::DELETE,
        &format!("/v2.0/actions/{sid}/runs/{run2}"),
    ))
    .await;
    assert_eq!(status, 204);
    // Another node (a restarted server) finishes the first run once its time is up.
    let (_, node2) = app.second_node().await;
    app.clock.advance_ms(61_000);
    dialtone::workers::tick(&node2).await.expect("tick");
    let r = finished_run(&app, &acct, &sid, &run).await;
    assert_eq!(r["status"], "completed", "{r}");
    assert_eq!(r["variables"]["$done"], true);
    let (_, stopped) = send(app.req(
        &acct,
        Method::GET,
        &format!("/v2.0/actions/{sid}/runs/{run2}"),
    ))
    .await;
    assert_eq!(stopped["status"], "stopped", "{stopped}");
    assert!(stopped["variables"].get("$done").is_none());
}

async fn a_run_whose_stored_waits_are_unreadable_fails_instead_of_hanging(app: TestApp) {
    let acct = app.account().await;
    let sid = scenario(&app, &acct, "branches:\n  api-initiated:\n    actions:\n      - action: wait@v1\n        params: {seconds: 60}\n      - action: javascript@v1\n        params: {code: \"$done = true\"}\n").await;
    let (_, started) =
        send(app.req(&acct, Method::POST, &format!("/v2.0/actions/{sid}/runs"))).await;
    let run = started["runId"].as_str().unwrap().to_owned();
    // Its waits once stored, as a faulty disk or an older node's bug could leave them.
    let mut changed = 0;
    for _ in 0..500 {
        let run = run.clone();
        changed = app
            .state
            .store
            .write(move |c| {
                c.execute(
                    "UPDATE runs SET pending = '[{\"kind\": \"nosuch\"}]' WHERE sid = $1 AND pending LIKE '%wait%'",
                    dialtone_store::params![run.as_str()],
                )
            })
            .await
            .expect("corrupt");
        if changed == 1 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert_eq!(changed, 1);
    app.clock.advance_ms(61_000);
    app.tick().await;
    let run = started["runId"].as_str().unwrap();
    let r = finished_run(&app, &acct, &sid, run).await;
    assert_eq!(r["status"], "failed", "{r}");
    let error = r["error"].as_str().unwrap_or_default();
    assert!(error.contains("stored waits cannot be read"), "{r}");
    assert!(r["variables"].get("$done").is_none(), "{r}");
}

async fn an_inbound_sms_runs_the_attached_scenario(app: TestApp) {
    let acct = app.account().await;
    let number = buy(&app, &acct, "country=GB&type=mobile").await;
    let sid = scenario(&app, &acct, "branches:\n  inbound-sms:\n    actions:\n      - action: sms@v1\n        params: {to: [\"${{ sms.fromNumber }}\"], body: \"Thanks: ${{ sms.bodyText }}\"}\n        result: $reply\n").await;
    send(app.req(
        &acct,
        Method::PUT,
        &format!("/v2.0/numbers/{number}/scenario/{sid}"),
    ))
    .await;
    let (status, sms) = send(
        app.req(&acct, Method::POST, "/sandbox/sms")
            .json(&json!({"from": "+447700900777", "to": number, "body": "hello"})),
    )
    .await;
    assert_eq!(status, 201, "{sms}");
    app.tick().await;
    let (_, out) = send(app.req(
        &acct,
        Method::GET,
        "/v2.0/sms?direction=outbound&to=%2B447700900777&createdAfter=2025-01-01T00:00:00Z&createdBefore=2026-01-01T00:00:00Z",
    ))
    .await;
    assert_eq!(out["total"], 1, "{out}");
    assert_eq!(out["hits"][0]["body"], "Thanks: hello");
    assert_eq!(
        out["hits"][0]["from"],
        number.as_str(),
        "the reply comes from the account's number in that country"
    );
}

async fn an_inbound_call_follows_the_ivr_and_leaves_cdrs(app: TestApp) {
    let acct = app.account().await;
    let number = buy(&app, &acct, "country=GB&type=mobile").await;
    let script = r#"variables:
  $sales: "+447700900123"
branches:
  inbound-call:
    actions:
      - action: gather@v2
        params: { maxDigits: 1, timeout: 10, prompt: { what: "Press 1 for sales" } }
        result: $choice
      - if: "$choice.digits === '1'"
        goto: { branch: sales }
      - action: say@v2
        params: { what: "Goodbye ${{ call.fromNumber }}" }
  sales:
    actions:
      - action: dial@v1
        params: { targets: [ { number: "${{ $sales }}", timeout: 20 } ] }
        result: $dial
  hangup:
    actions:
      - action: javascript@v1
        params: { code: "$after = 'hangup ran'" }
"#;
    let sid = scenario(&app, &acct, script).await;
    send(app.req(
        &acct,
        Method::PUT,
        &format!("/v2.0/numbers/{number}/scenario/{sid}"),
    ))
    .await;
    let (status, call) = send(
        app.req(&acct, Method::POST, "/sandbox/calls")
            .json(&json!({"from": "+447700900999", "to": number})),
    )
    .await;
    assert_eq!(status, 201, "{call}");
    assert_eq!(call["status"], "answered", "{call}");
    let kinds: Vec<&str> = call["timeline"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["ringing", "answered", "say", "gather"], "{call}");
    assert_eq!(call["timeline"][2]["data"]["what"], "Press 1 for sales");
    let callid = call["callid"].as_str().unwrap().to_owned();
    assert_eq!(app.events(&acct.sid, "call.inbound_start").await.len(), 1);
    let (status, after) = send(
        app.req(
            &acct,
            Method::POST,
            &format!("/sandbox/calls/{callid}/dtmf"),
        )
        .json(&json!({"digits": "1"})),
    )
    .await;
    assert_eq!(status, 200, "{after}");
    let dial = after["timeline"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["kind"] == "dial")
        .expect("dialled");
    assert_eq!(dial["data"]["target"], "+447700900123");
    assert_eq!(dial["data"]["status"], "answered");
    assert_eq!(app.events(&acct.sid, "call.outbound_start").await.len(), 1);
    // Talk for 61 s, then the caller hangs up: two started minutes on each leg.
    let (_, before) = send(app.req(&acct, Method::GET, "/v2.0/billing/credit")).await;
    app.clock.advance_ms(61_000);
    let (status, ended) = send(app.req(
        &acct,
        Method::POST,
        &format!("/sandbox/calls/{callid}/hangup"),
    ))
    .await;
    assert_eq!(status, 200, "{ended}");
    assert_eq!(ended["status"], "ended");
    assert_eq!(ended["hangupSource"], "caller");
    assert_eq!(ended["durationAnswered"], 61);
    assert_eq!(ended["durationBilled"], 120);
    let hangups = app.events(&acct.sid, "call.inbound_hangup").await;
    assert_eq!(hangups.len(), 1);
    assert_eq!(hangups[0]["callid"], callid.as_str());
    assert_eq!(app.events(&acct.sid, "call.outbound_hangup").await.len(), 1);
    let (_, after_credit) = send(app.req(&acct, Method::GET, "/v2.0/billing/credit")).await;
    let spent: f64 = before["amount"].as_str().unwrap().parse::<f64>().unwrap()
        - after_credit["amount"]
            .as_str()
            .unwrap()
            .parse::<f64>()
            .unwrap();
    assert!(
        spent > 0.0,
        "calls are billed per started minute: {before} -> {after_credit}"
    );
    let leg_debit = |v: &Value| v["billingDebit"].as_str().unwrap().parse::<f64>().unwrap();
    let outbound = app.events(&acct.sid, "call.outbound_hangup").await;
    let out_debit = outbound[0]["b_customer_debit"]
        .as_str()
        .unwrap()
        .parse::<f64>()
        .unwrap();
    // The events carry the earlier CDR.In / CDR.Out shapes.
    assert_eq!(hangups[0]["cli_number"], "+447700900999");
    assert_eq!(hangups[0]["did_intl_number"], number.as_str());
    assert_eq!(hangups[0]["hangupsource"], "CALLER");
    assert_eq!(hangups[0]["duration_answered"], 61);
    assert_eq!(hangups[0]["duration_billed"], 120);
    assert_eq!(hangups[0]["scenario_hash"], sid.to_uppercase());
    assert!(
        hangups[0]["start"].as_str().unwrap().len() == 19,
        "{}",
        hangups[0]
    );
    assert_eq!(outbound[0]["number"], "+447700900123");
    assert_eq!(outbound[0]["dialstatus"], "ANSWER");
    assert_eq!(outbound[0]["callid_in"], callid.as_str());
    let starts = app.events(&acct.sid, "call.outbound_start").await;
    assert_eq!(starts[0]["hangup"], "0000-00-00 00:00:00");
    assert!(leg_debit(&ended) > 0.0, "{ended}");
    assert!(
        (spent - leg_debit(&ended) - out_debit).abs() < 0.001,
        "the ledger took exactly what the CDRs say: {spent} vs {ended} + {}",
        outbound[0]
    );
    // The run went to sales, and the hangup branch ran after the call.
    let (_, list) = send(app.req(&acct, Method::GET, &format!("/v2.0/actions/{sid}"))).await;
    assert_eq!(list["sid"], sid.as_str());
    let runs = app
        .state
        .store
        .read(|c| c.query("SELECT sid, status, variables FROM runs", &[]))
        .await
        .expect("runs");
    assert_eq!(runs.len(), 1);
    let vars: Value = serde_json::from_str(&runs[0].text(2).unwrap()).unwrap();
    assert_eq!(vars["$choice"]["digits"], "1", "{vars}");
    assert_eq!(vars["$dial"]["ok"], true, "{vars}");
    assert_eq!(vars["$after"], "hangup ran", "{vars}");
}

async fn calls_to_detached_numbers_are_declined(app: TestApp) {
    let acct = app.account().await;
    let number = buy(&app, &acct, "country=GB&type=mobile").await;
    let (status, call) = send(
        app.req(&acct, Method::POST, "/sandbox/calls")
            .json(&json!({"from": "+447700900999", "to": number})),
    )
    .await;
    assert_eq!(status, 201, "{call}");
    assert_eq!(call["status"], "ended");
    assert_eq!(call["hangupCause"], 1, "unallocated number");
    assert!(
        call["timeline"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["kind"] == "declined"
                && t["data"]["message"]
                    .as_str()
                    .unwrap()
                    .contains("not allocated")),
        "{call}"
    );
    assert_eq!(app.events(&acct.sid, "call.inbound_hangup").await.len(), 1);
    let (status, body) = send(
        app.req(&acct, Method::POST, "/sandbox/calls")
            .json(&json!({"from": "nope", "to": number})),
    )
    .await;
    assert_error(status, &body, 400, "validation_error");
}

async fn gather_times_out_and_voicemail_records_real_audio(app: TestApp) {
    let acct = app.account().await;
    let number = buy(&app, &acct, "country=GB&type=mobile").await;
    let script = r#"branches:
  inbound-call:
    actions:
      - action: gather@v2
        params: { maxDigits: 4, timeout: 5 }
        result: $code
      - action: record@v1
        params: { maxDuration: 30 }
        result: $voicemail
      - action: say@v2
        params: { what: "got ${{ $code.reason }} and ${{ $voicemail.duration }}s" }
"#;
    let sid = scenario(&app, &acct, script).await;
    send(app.req(
        &acct,
        Method::PUT,
        &format!("/v2.0/actions/{sid}/numbers/{number}"),
    ))
    .await;
    let (_, call) = send(
        app.req(&acct, Method::POST, "/sandbox/calls")
            .json(&json!({"from": "+447700900999", "to": number})),
    )
    .await;
    let callid = call["callid"].as_str().unwrap().to_owned();
    send(
        app.req(
            &acct,
            Method::POST,
            &format!("/sandbox/calls/{callid}/dtmf"),
        )
        .json(&json!({"digits": "12"})),
    )
    .await;
    app.clock.advance_ms(5_000);
    app.tick().await;
    let (_, now) = send(app.req(&acct, Method::GET, &format!("/sandbox/calls/{callid}"))).await;
    let gathered = now["timeline"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["kind"] == "gathered")
        .expect("gathered");
    assert_eq!(
        gathered["data"],
        json!({"digits": "12", "reason": "timeout"})
    );
    assert!(
        now["timeline"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["kind"] == "record"),
        "{now}"
    );
    // The caller speaks: 2 s of a 1 kHz tone at 16 kHz, as WAV.
    let wav = tone_wav(16_000, 2_000);
    let (status, spoke) = send(
        app.req(
            &acct,
            Method::POST,
            &format!("/sandbox/calls/{callid}/audio"),
        )
        .header("content-type", "audio/wav")
        .body(wav),
    )
    .await;
    assert_eq!(status, 200, "{spoke}");
    let says: Vec<&str> = spoke["timeline"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["kind"] == "say")
        .map(|t| t["data"]["what"].as_str().unwrap())
        .collect();
    assert_eq!(says, ["got timeout and 2s"], "{spoke}");
    assert_eq!(
        spoke["status"], "ended",
        "the call hangs up at the end of the branch"
    );
    let recs = app.events(&acct.sid, "media.recording.new").await;
    assert_eq!(recs.len(), 1);
    assert_eq!(recs[0]["type"], "VOICEMAIL");
    assert_eq!(recs[0]["duration"], 2);
    assert_eq!(recs[0]["callid"], callid.as_str());
    let rec_sid = recs[0]["hash"].as_str().unwrap().to_lowercase();
    let audio = app
        .req(
            &acct,
            Method::GET,
            &format!("/v2.0/recordings/{rec_sid}/file"),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(audio.status(), 200);
    let audio = audio.bytes().await.unwrap();
    let (rate, channels, ms) = dialtone_media::wav_info(&audio).expect("a WAV recording");
    assert_eq!((rate, channels), (8_000, 1));
    assert!((ms as i64 - 2_000).abs() <= 50, "{ms} ms");
    // Unusable audio is refused.
    let (_, call2) = send(
        app.req(&acct, Method::POST, "/sandbox/calls")
            .json(&json!({"from": "+447700900999", "to": number})),
    )
    .await;
    let callid2 = call2["callid"].as_str().unwrap();
    let (status, body) = send(
        app.req(
            &acct,
            Method::POST,
            &format!("/sandbox/calls/{callid2}/audio"),
        )
        .header("content-type", "audio/wav")
        .body(b"\x89PNG\r\n\x1a\nnot audio".to_vec()),
    )
    .await;
    assert_error(status, &body, 400, "unsupported_format");
}

async fn the_api_hangs_up_live_calls_only(app: TestApp) {
    let acct = app.account().await;
    let other = app.account().await;
    let number = buy(&app, &acct, "country=GB&type=mobile").await;
    let sid = scenario(&app, &acct, "branches:\n  inbound-call:\n    actions:\n      - action: startRecording@v1\n        events:\n          ready:\n            - action: javascript@v1\n              params: {code: \"$rec = recording.sid\"}\n      - action: gather@v2\n        params: {maxDigits: 1, timeout: 60}\n").await;
    send(app.req(
        &acct,
        Method::PUT,
        &format!("/v2.0/actions/{sid}/numbers/{number}"),
    ))
    .await;
    let (_, call) = send(
        app.req(&acct, Method::POST, "/sandbox/calls")
            .json(&json!({"from": "+447700900999", "to": number})),
    )
    .await;
    let callid = call["callid"].as_str().unwrap().to_owned();
    let (status, _) = send(app.req(&other, Method::DELETE, &format!("/v2.0/calls/{callid}"))).await;
    assert_eq!(status, 404, "another account's call");
    app.clock.advance_ms(3_000);
    let (status, _) = send(app.req(&acct, Method::DELETE, &format!("/v2.0/calls/{callid}"))).await;
    assert_eq!(status, 204);
    let (status, _) = send(app.req(&acct, Method::DELETE, &format!("/v2.0/calls/{callid}"))).await;
    assert_eq!(status, 404, "no longer live");
    let (_, ended) = send(app.req(&acct, Method::GET, &format!("/sandbox/calls/{callid}"))).await;
    assert_eq!(ended["hangupSource"], "system");
    let recs = app.events(&acct.sid, "media.recording.new").await;
    assert_eq!(recs.len(), 1, "startRecording made a call recording");
    assert_eq!(recs[0]["type"], "CALL");
    assert_eq!(recs[0]["duration"], 3, "silence of the call's length");
    let runs = app
        .state
        .store
        .read(|c| c.query("SELECT variables FROM runs", &[]))
        .await
        .expect("runs");
    let vars: Value = serde_json::from_str(&runs[0].text(0).unwrap()).unwrap();
    assert_eq!(
        vars["$rec"].as_str().unwrap(),
        recs[0]["hash"].as_str().unwrap().to_lowercase(),
        "events.ready ran with the recording: {vars}"
    );
}

/// A mono 16-bit WAV of a 1 kHz tone.
pub(crate) fn tone_wav(rate: u32, ms: u32) -> Vec<u8> {
    let n = rate * ms / 1000;
    let mut data = Vec::with_capacity(n as usize * 2);
    for i in 0..n {
        let v =
            (f64::from(i) * 2.0 * std::f64::consts::PI * 1000.0 / f64::from(rate)).sin() * 12_000.0;
        data.extend_from_slice(&(v as i16).to_le_bytes());
    }
    let mut out = Vec::new();
    out.extend_from_slice(b"RIFF");
    out.extend_from_slice(&(36 + data.len() as u32).to_le_bytes());
    out.extend_from_slice(b"WAVEfmt ");
    out.extend_from_slice(&16u32.to_le_bytes());
    out.extend_from_slice(&1u16.to_le_bytes());
    out.extend_from_slice(&1u16.to_le_bytes());
    out.extend_from_slice(&rate.to_le_bytes());
    out.extend_from_slice(&(rate * 2).to_le_bytes());
    out.extend_from_slice(&2u16.to_le_bytes());
    out.extend_from_slice(&16u16.to_le_bytes());
    out.extend_from_slice(b"data");
    out.extend_from_slice(&(data.len() as u32).to_le_bytes());
    out.extend_from_slice(&data);
    out
}

both_backends!(apps_and_actions_start_through_json_rpc);

async fn apps_and_actions_start_through_json_rpc(app: TestApp) {
    use crate::jsonrpc::rpc;
    let acct = app.account().await;
    let script = "branches:\n  api-initiated:\n    actions:\n      - action: javascript@v1\n        params: {code: \"$twice = $n * 2\"}\n";
    let created = rpc(
        &app,
        &acct,
        "apps.create",
        json!(["ACTIONS10", "rpc app", {"format": "YAML", "script": script}]),
    )
    .await;
    let a = &created["result"];
    assert_eq!(a["name"], "rpc app", "{created}");
    assert_eq!(a["p"]["script"], script);
    let hash = a["hash"].as_str().unwrap().to_owned();
    let bad = rpc(
        &app,
        &acct,
        "apps.create",
        json!(["ACTIONS10", "bad", {"format": "YAML", "script": "branches: ["}]),
    )
    .await;
    assert!(bad["error"]["code"].is_i64(), "{bad}");
    let wrong = rpc(
        &app,
        &acct,
        "apps.create",
        json!(["REALTIME10", "x", {"script": script}]),
    )
    .await;
    assert!(wrong["error"].is_object(), "{wrong}");
    let list = rpc(&app, &acct, "apps.get_list", json!([])).await;
    assert_eq!(list["result"].as_array().unwrap().len(), 1);
    // The same scenario is visible on v2.0 under its lowercase sid.
    let sid = hash.to_lowercase();
    let (status, _) = send(app.req(&acct, Method::GET, &format!("/v2.0/actions/{sid}"))).await;
    assert_eq!(status, 200);
    let started = rpc(
        &app,
        &acct,
        "actions.start",
        json!([hash, {"variables": {"$n": 21}}]),
    )
    .await;
    let run = started["result"]["runId"].as_str().unwrap().to_owned();
    let r = finished_run(&app, &acct, &sid, &run).await;
    assert_eq!(r["variables"]["$twice"], 42, "{r}");
    let edited = rpc(&app, &acct, "apps.edit", json!([hash, "renamed", null])).await;
    assert_eq!(edited["result"]["name"], "renamed", "{edited}");
    let deleted = rpc(&app, &acct, "apps.delete", json!([hash])).await;
    assert_eq!(deleted["result"], true);
    let gone = rpc(&app, &acct, "apps.get", json!([hash])).await;
    assert_eq!(gone["error"]["code"], 115, "{gone}");
}

/// The real service's published "call forwarding with recording" scenario, unchanged but for
/// its variables: `autoAnswer: false`, `dial@v1` with `answerOnBranch`, `bridge@v1` in that
/// branch, `fetch@v1` of `call` in the `hangup` branch. The caller's leg is answered when the
/// target answers (and billed for it), and the `hangup` branch sees the final CDR.
async fn transparent_forwarding_answers_on_the_target_and_pushes_the_final_cdr(app: TestApp) {
    let acct = app.account().await;
    let receiver = Receiver::start().await;
    let number = buy(&app, &acct, "country=GB&type=mobile").await;
    let published = include_str!("../../../actions/tests/fixtures/forwarding-record.yaml");
    let script = published
        .replace("\"+447700900200\"", "\"+447700900123\"")
        .replace("https://push.example.org", &receiver.url);
    assert_ne!(script, published, "the fixture's variables were replaced");
    let sid = scenario(&app, &acct, &script).await;
    send(app.req(
        &acct,
        Method::PUT,
        &format!("/v2.0/numbers/{number}/scenario/{sid}"),
    ))
    .await;
    let (_, before) = send(app.req(&acct, Method::GET, "/v2.0/billing/credit")).await;
    let (status, call) = send(
        app.req(&acct, Method::POST, "/sandbox/calls")
            .json(&json!({"from": "+447700900999", "to": number})),
    )
    .await;
    assert_eq!(status, 201, "{call}");
    assert_eq!(
        call["status"], "answered",
        "answered with the target: {call}"
    );
    let kinds: Vec<&str> = call["timeline"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["kind"].as_str().unwrap())
        .collect();
    let dial = kinds.iter().position(|k| *k == "dial").expect("dialled");
    let answered = kinds
        .iter()
        .position(|k| *k == "answered")
        .expect("answered");
    assert!(dial < answered, "not answered before the target: {kinds:?}");
    let callid = call["callid"].as_str().unwrap().to_owned();
    app.clock.advance_ms(61_000);
    let (status, ended) = send(app.req(
        &acct,
        Method::POST,
        &format!("/sandbox/calls/{callid}/hangup"),
    ))
    .await;
    assert_eq!(status, 200, "{ended}");
    assert_eq!(ended["durationAnswered"], 61, "{ended}");
    assert_eq!(ended["durationBilled"], 120, "{ended}");
    assert!(ended["answered"].is_string(), "{ended}");
    let debit: f64 = ended["billingDebit"].as_str().unwrap().parse().unwrap();
    assert!(debit > 0.0, "the forwarded caller's leg is billed: {ended}");
    let (_, after) = send(app.req(&acct, Method::GET, "/v2.0/billing/credit")).await;
    assert_ne!(before["amount"], after["amount"]);
    let hangups = app.events(&acct.sid, "call.inbound_hangup").await;
    assert_ne!(
        hangups[0]["answer"], "0000-00-00 00:00:00",
        "{}",
        hangups[0]
    );
    app.tick().await;
    let got = receiver.received();
    let pushed = |path: &str| {
        got.iter()
            .find(|r| r.path == path)
            .unwrap_or_else(|| {
                panic!(
                    "nothing posted to {path}: {:?}",
                    got.iter().map(|r| &r.path).collect::<Vec<_>>()
                )
            })
            .json
            .clone()
    };
    let metadata = pushed("/hook/metadata");
    let cdr = &metadata["call"]["cdr"];
    assert_eq!(cdr["status"], "ended", "{metadata}");
    assert!(cdr["ended"].is_string(), "{metadata}");
    assert!(cdr["answered"].is_string(), "{metadata}");
    assert_eq!(cdr["hangupCause"], 16, "{metadata}");
    assert_eq!(cdr["hangupSource"], "caller", "{metadata}");
    assert_eq!(cdr["durationTotal"], 61, "{metadata}");
    assert_eq!(cdr["durationAnswered"], 61, "{metadata}");
    assert_eq!(cdr["durationBilled"], 120, "{metadata}");
    assert_eq!(cdr["billingDebit"], ended["billingDebit"], "{metadata}");
    assert_eq!(metadata["call"]["fromNumber"], "+447700900999");
    assert_eq!(metadata["app"]["sid"], sid.as_str());
    // The recording of the bridged call was pushed when it was ready.
    let data = pushed("/hook/data");
    assert_eq!(data["recording"]["callid"], callid.as_str(), "{data}");
    assert_eq!(data["recording"]["duration"], 61, "{data}");
}

/// `dial@v1` rings its targets one after the other through the voice network: busy and
/// unanswered targets are passed, the first that answers connects; when none answers, the
/// dial's result is the last target's status.
async fn a_dial_rings_its_targets_in_turn_until_one_answers(app: TestApp) {
    let acct = app.account().await;
    let number = buy(&app, &acct, "country=GB&type=mobile").await;
    let script = |targets: &[&str]| {
        let list: Vec<String> = targets
            .iter()
            .map(|t| format!("            - number: \"{t}\"\n"))
            .collect();
        format!(
            "branches:\n  inbound-call:\n    actions:\n      - action: dial@v1\n        result: $dialled\n        params:\n          targets:\n{}      - action: say@v2\n        params: {{what: \"dialled ${{{{ $dialled.status }}}} ${{{{ $dialled.ok }}}}\"}}\n",
            list.concat()
        )
    };
    for (targets, answered) in [
        (
            vec!["+447700900100", "+447700900101", "+447700900123"],
            true,
        ),
        (
            vec!["+447700900100", "+447700900102", "+447700900101"],
            false,
        ),
    ] {
        let sid = scenario(&app, &acct, &script(&targets)).await;
        send(app.req(
            &acct,
            Method::PUT,
            &format!("/v2.0/numbers/{number}/scenario/{sid}"),
        ))
        .await;
        let (status, call) = send(
            app.req(&acct, Method::POST, "/sandbox/calls")
                .json(&json!({"from": "+447700900999", "to": number})),
        )
        .await;
        assert_eq!(status, 201, "{call}");
        let dials: Vec<(String, String)> = call["timeline"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|t| t["kind"] == "dial")
            .map(|t| {
                (
                    t["data"]["target"].as_str().unwrap().to_owned(),
                    t["data"]["status"].as_str().unwrap().to_owned(),
                )
            })
            .collect();
        let expected: Vec<(String, String)> = if answered {
            vec![
                ("+447700900100".into(), "busy".into()),
                ("+447700900101".into(), "no-answer".into()),
                ("+447700900123".into(), "answered".into()),
            ]
        } else {
            vec![
                ("+447700900100".into(), "busy".into()),
                ("+447700900102".into(), "failed".into()),
                ("+447700900101".into(), "no-answer".into()),
            ]
        };
        assert_eq!(dials, expected, "{call}");
        let connected = call["timeline"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["kind"] == "connected");
        assert_eq!(connected, answered, "{call}");
        let said: Vec<&str> = call["timeline"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|t| t["kind"] == "say")
            .map(|t| t["data"]["what"].as_str().unwrap())
            .collect();
        let callid = call["callid"].as_str().unwrap().to_owned();
        if answered {
            // The dial holds while the legs are bridged: its result comes with the hangup.
            assert!(said.is_empty(), "{said:?}");
            assert_eq!(call["status"], "answered", "{call}");
            let (_, ended) = send(app.req(
                &acct,
                Method::POST,
                &format!("/sandbox/calls/{callid}/hangup"),
            ))
            .await;
            assert_eq!(ended["status"], "ended", "{ended}");
        } else {
            assert_eq!(said, ["dialled no-answer false"], "{call}");
            let outbound = app.events(&acct.sid, "call.outbound_start").await;
            assert!(
                outbound.iter().all(|e| e["callid_in"] != callid.as_str()),
                "no leg for targets that did not answer: {outbound:?}"
            );
        }
    }
}
