//! The contract's example and the published scenarios parse and run through a scripted driver.

#![allow(
    clippy::unwrap_used,
    clippy::too_many_lines,
    reason = "tests: a failed unwrap is a failed test, and a scenario reads best whole"
)]

mod common;

use common::*;
use dialtone_actions::{CommandKind, Event, Outcome};
use serde_json::json;

#[test]
fn every_fixture_parses() {
    let dir = format!("{}/tests/fixtures", env!("CARGO_MANIFEST_DIR"));
    let mut count = 0;
    for entry in std::fs::read_dir(dir).expect("fixtures dir") {
        let path = entry.expect("entry").path();
        if path.extension().is_some_and(|e| e == "yaml") {
            let text = std::fs::read_to_string(&path).expect("read");
            dialtone_actions::parse_scenario(&text)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            count += 1;
        }
    }
    assert!(count >= 8);
}

#[test]
fn contract_example_inbound_call_goes_to_sales_on_1() {
    let sc = load_fixture("contract-example.yaml");
    assert_eq!(sc.description(), Some("Press 1 for sales"));
    assert!(sc.default_auto_answer());
    assert_eq!(sc.default_language(), Some("en-US"));
    let t = drive_default(&sc, "inbound-call", call_context());
    assert_eq!(t.outcome, Outcome::Completed);
    assert_eq!(t.kinds(), ["answer", "gather", "dial", "hangup"]);
    match &t.commands[1].kind {
        CommandKind::Gather {
            max_digits, prompt, ..
        } => {
            assert_eq!(*max_digits, 1);
            assert_eq!(
                prompt,
                &Some(("Press 1 for sales".to_string(), Some("en-US".to_string())))
            );
        }
        other => panic!("{other:?}"),
    }
    match &t.commands[2].kind {
        CommandKind::Dial { targets, .. } => {
            assert_eq!(targets[0].number, "+447700900123");
            assert_eq!(targets[0].timeout_secs, 20);
        }
        other => panic!("{other:?}"),
    }
    let vars = t.state.variables();
    assert_eq!(vars["$choice"]["digits"], "1");
    assert_eq!(vars["$dial"]["ok"], true);
}

#[test]
fn contract_example_says_goodbye_on_other_digits() {
    let sc = load_fixture("contract-example.yaml");
    let t = drive(&sc, "inbound-call", call_context(), |c| {
        let value = match &c.kind {
            CommandKind::Gather { .. } => json!({"digits": "2", "reason": "max-digits"}),
            _ => default_result(c),
        };
        vec![Event::Result {
            fiber: c.fiber,
            value,
        }]
    });
    assert_eq!(t.kinds(), ["answer", "gather", "say", "hangup"]);
    assert_eq!(
        t.commands[2].kind,
        CommandKind::Say {
            what: "Goodbye +447700900555".into(),
            language: Some("en-US".into())
        }
    );
}

#[test]
fn contract_example_sms_and_api_branches() {
    let sc = load_fixture("contract-example.yaml");
    let t = drive_default(&sc, "inbound-sms", sms_context());
    assert_eq!(t.outcome, Outcome::Completed);
    assert_eq!(
        t.commands[0].kind,
        CommandKind::SendSms {
            to: vec!["+447700900555".into()],
            body: "Thanks!".into(),
            from: None
        }
    );
    let t = drive_default(&sc, "api-initiated", api_context());
    assert_eq!(t.outcome, Outcome::Completed);
    match &t.commands[0].kind {
        CommandKind::Fetch {
            url,
            method,
            body,
            version,
            ..
        } => {
            assert_eq!(url, "https://example.org/hook");
            assert_eq!(method, "POST");
            assert_eq!(*version, 2);
            let run: serde_json::Value =
                serde_json::from_str(body.as_deref().unwrap_or("")).expect("json body");
            assert_eq!(run, json!({"id": "api:1", "type": "api"}));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(t.state.variables()["$api"]["status"], 200);
}

#[test]
fn forwarding_with_recording_runs_answered_branch_and_ready_handler() {
    let sc = load_fixture("forwarding-record.yaml");
    assert!(!sc.default_auto_answer());
    let t = drive(&sc, "inbound-call", call_context(), |c| match &c.kind {
        CommandKind::Dial {
            answer_on_branch, ..
        } => {
            assert_eq!(answer_on_branch.as_deref(), Some("answered"));
            vec![Event::DialAnswered { fiber: c.fiber }]
        }
        CommandKind::StartRecording { .. } => vec![Event::Result {
            fiber: c.fiber,
            value: json!({"sid": "rec1"}),
        }],
        CommandKind::Bridge => vec![
            Event::Result {
                fiber: c.fiber,
                value: json!(null),
            },
            Event::ActionEvent {
                fiber: c.fiber,
                name: "ready".into(),
                value: json!({"sid": "rec1", "url": "https://rec"}),
            },
            Event::Result {
                fiber: 0,
                value: json!({"ok": true, "status": "answered"}),
            },
        ],
        _ => vec![Event::Result {
            fiber: c.fiber,
            value: default_result(c),
        }],
    });
    assert_eq!(t.outcome, Outcome::Completed, "{:?}", t.log);
    // no implicit answer (autoAnswer: false); the answered leg runs on fiber 1
    assert_eq!(
        t.kinds(),
        [
            "dial",
            "startRecording",
            "bridge",
            "hangup",
            "fetch",
            "hangup"
        ]
    );
    assert_eq!(t.commands[1].fiber, 1);
    match &t.commands[4].kind {
        CommandKind::Fetch {
            url,
            headers,
            body,
            version,
            ..
        } => {
            assert_eq!(url, "https://push.example.org/data");
            assert_eq!(*version, 1);
            assert!(headers.contains(&("X-Custom".to_string(), "some-value".to_string())));
            assert!(
                headers.contains(&("Content-Type".to_string(), "application/json".to_string()))
            );
            let body: serde_json::Value =
                serde_json::from_str(body.as_deref().unwrap_or("")).expect("json body");
            assert_eq!(body["recording"]["sid"], "rec1");
            assert_eq!(body["app"]["sid"], "abcdef12");
            assert_eq!(body["call"]["fromNumber"], "+447700900555");
        }
        other => panic!("{other:?}"),
    }
    // the hangup branch, started separately with the call
    let t = drive_default(&sc, "hangup", call_context());
    assert_eq!(t.outcome, Outcome::Completed);
    assert_eq!(t.kinds(), ["fetch"]);
}

#[test]
fn fetch_and_push_greets_the_caller() {
    let sc = load_fixture("fetch-and-push.yaml");
    let t = drive_default(&sc, "inbound-call", call_context());
    assert_eq!(t.outcome, Outcome::Completed, "{:?}", t.log);
    assert_eq!(
        t.kinds(),
        ["ringing", "fetch", "answer", "say", "say", "hangup"]
    );
    match &t.commands[1].kind {
        CommandKind::Fetch {
            method, timeout_ms, ..
        } => {
            assert_eq!(method, "GET");
            assert_eq!(*timeout_ms, 4000);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        t.commands[3].kind,
        CommandKind::Say {
            what: "Hello Ms Ada Lovelace!".into(),
            language: Some("en-GB".into())
        }
    );
    assert_eq!(t.state.variables()["$user"]["name"]["first"], "Ada");
}

#[test]
fn fetch_and_push_hangs_up_when_nothing_is_known() {
    let sc = load_fixture("fetch-and-push.yaml");
    let t = drive(&sc, "inbound-call", call_context(), |c| {
        let value = match &c.kind {
            CommandKind::Fetch { .. } => json!({"ok": false, "status": 500}),
            _ => default_result(c),
        };
        vec![Event::Result {
            fiber: c.fiber,
            value,
        }]
    });
    assert_eq!(t.outcome, Outcome::Completed, "{:?}", t.log);
    assert_eq!(t.kinds(), ["ringing", "fetch", "answer", "say", "hangup"]);
    // the hangup branch sees what the call collected through the run's variables
    let mut ctx = call_context();
    ctx.input = t.state.variables();
    let h = drive_default(&sc, "hangup", ctx);
    assert_eq!(h.outcome, Outcome::Completed);
    match &h.commands[0].kind {
        CommandKind::Fetch { body, .. } => {
            // $user was never set: JSON.stringify(undefined) interpolates as "undefined"
            let body = body.as_deref().unwrap_or("");
            assert!(body.contains("\"user\": undefined"), "{body}");
            assert!(body.contains("\"callid\":42"), "{body}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn push_examples_run() {
    let sc = load_fixture("push-cdr.yaml");
    let t = drive_default(&sc, "hangup", call_context());
    assert_eq!(t.kinds(), ["fetch"]);
    let sc = load_fixture("push-dtmf.yaml");
    let t = drive_default(&sc, "inbound-call", call_context());
    assert_eq!(t.kinds(), ["answer", "gather", "hangup"]);
    let mut ctx = call_context();
    ctx.input = t.state.variables();
    let h = drive_default(&sc, "hangup", ctx);
    match &h.commands[0].kind {
        CommandKind::Fetch { body, .. } => {
            let body: serde_json::Value =
                serde_json::from_str(body.as_deref().unwrap_or("")).expect("json");
            assert_eq!(body["dtmf"]["digits"], "1");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn missed_call_sends_an_sms_to_mobiles() {
    let sc = load_fixture("missed-call-sms.yaml");
    let t = drive(&sc, "inbound-call", call_context(), |c| {
        let value = match &c.kind {
            CommandKind::Dial { .. } => json!({"ok": false, "status": "no-answer"}),
            _ => default_result(c),
        };
        vec![Event::Result {
            fiber: c.fiber,
            value,
        }]
    });
    assert_eq!(t.outcome, Outcome::Completed, "{:?}", t.log);
    assert_eq!(t.kinds(), ["answer", "dial", "sendSms", "hangup"]);
    match &t.commands[2].kind {
        CommandKind::SendSms { to, body, .. } => {
            assert_eq!(to, &["+447700900555".to_string()]);
            assert_eq!(
                body,
                "Hello! You called while we were away. We will call you back soon.\n"
            );
        }
        other => panic!("{other:?}"),
    }
    // a landline caller gets no SMS
    let mut ctx = call_context();
    ctx.call = Some(json!({"fromNumber": "+441632960000", "fromType": "FIXED_LINE"}));
    let t = drive(&sc, "inbound-call", ctx, |c| {
        let value = match &c.kind {
            CommandKind::Dial { .. } => json!({"ok": false}),
            _ => default_result(c),
        };
        vec![Event::Result {
            fiber: c.fiber,
            value,
        }]
    });
    assert_eq!(t.kinds(), ["answer", "dial", "hangup"]);
}

#[test]
fn sms_auto_reply_logs_and_replies() {
    let sc = load_fixture("sms-auto-reply.yaml");
    let t = drive_default(&sc, "inbound-sms", sms_context());
    assert_eq!(t.outcome, Outcome::Completed);
    assert_eq!(t.kinds(), ["sendSms"]);
    let info = t.messages("info");
    assert!(info[0].starts_with("SMS received {\""), "{info:?}");
    assert!(info[0].contains("\"sid\":\"smssid01\""), "{info:?}");
}

#[test]
fn reference_snippets_run() {
    let sc = load_fixture("reference-goto.yaml");
    let mut ctx = call_context();
    ctx.input.insert("ticketID".into(), json!("A12"));
    ctx.input.insert("$dial".into(), json!({"ok": false}));
    let t = drive_default(&sc, "inbound-call", ctx);
    assert_eq!(t.outcome, Outcome::Completed, "{:?}", t.log);
    let said: Vec<String> = t
        .commands
        .iter()
        .filter_map(|c| match &c.kind {
            CommandKind::Say { what, .. } => Some(what.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(
        said,
        [
            "Hello! Your number is +447700900555.",
            "I know that 1 + 1 equals 2\n",
            "Your ticket ID is A 1 2\n",
            "Sorry, we are not available at the moment."
        ]
    );
}
