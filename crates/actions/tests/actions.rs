//! Each action, and the control flow around it, without a server.

#![allow(
    clippy::unwrap_used,
    clippy::too_many_lines,
    reason = "tests: a failed unwrap is a failed test, and a scenario reads best whole"
)]

mod common;

use common::*;
use dialtone_actions::{
    CommandKind, DialTarget, Event, Limits, Outcome, parse_scenario, resume, start,
};
use serde_json::json;

/// An api-initiated scenario with these entries (YAML, indented under `actions:`).
fn api(entries: &str) -> dialtone_actions::Scenario {
    let yaml = format!(
        "defaults:\n  language: fr-FR\nbranches:\n  api-initiated:\n    actions:\n{}\n  other:\n    actions:\n      - action: log@v1\n        params: {{ message: in other }}\n",
        entries
            .lines()
            .map(|l| format!("      {l}"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    parse(&yaml)
}

fn first_command(entries: &str) -> CommandKind {
    let sc = api(entries);
    let step = start(&sc, "api-initiated", api_context(), &Limits::default());
    assert_eq!(step.outcome, Outcome::Waiting, "{:?}", step.log);
    step.commands[0].kind.clone()
}

#[test]
fn answer_ringing_hangup_on_a_call() {
    let sc = parse(
        "defaults: { autoAnswer: false }\nbranches:\n  inbound-call:\n    actions:\n      - action: ringing@v1\n      - action: answer@v1\n      - action: hangup@v1\n      - action: log@v1\n        params: { message: never }\n",
    );
    let t = drive_default(&sc, "inbound-call", call_context());
    assert_eq!(t.kinds(), ["ringing", "answer", "hangup"]);
    assert_eq!(t.outcome, Outcome::Completed);
    assert!(!t.messages("info").contains(&"never".to_string()));
}

#[test]
fn say_uses_the_default_language_unless_given() {
    assert_eq!(
        first_command("- action: say@v2\n  params: { what: Bonjour }"),
        CommandKind::Say {
            what: "Bonjour".into(),
            language: Some("fr-FR".into())
        }
    );
    assert_eq!(
        first_command("- action: say@v2\n  params: { what: Hi, language: en-US }"),
        CommandKind::Say {
            what: "Hi".into(),
            language: Some("en-US".into())
        }
    );
}

#[test]
fn play_takes_an_audio_file() {
    assert_eq!(
        first_command("- action: play@v1\n  params: { media: af12cd34 }"),
        CommandKind::Play {
            media: "af12cd34".into()
        }
    );
}

#[test]
fn gather_defaults_and_result() {
    assert_eq!(
        first_command("- action: gather@v2\n  params: { maxDigits: 4 }"),
        CommandKind::Gather {
            max_digits: 4,
            min_digits: 1,
            timeout_secs: 10,
            finish_on_key: None,
            prompt: None
        }
    );
    assert_eq!(
        first_command(
            "- action: gather@v2\n  params: { maxDigits: 4, minDigits: 2, timeout: 5, finishOnKey: '#', prompt: { what: Code?, language: en-GB } }"
        ),
        CommandKind::Gather {
            max_digits: 4,
            min_digits: 2,
            timeout_secs: 5,
            finish_on_key: Some("#".into()),
            prompt: Some(("Code?".into(), Some("en-GB".into())))
        }
    );
    let sc = api(
        "- action: gather@v2\n  params: { maxDigits: 1 }\n  result: $g\n- action: log@v1\n  params: { message: 'got ${{ $g.digits }} (${{ $g.reason }})' }",
    );
    let t = drive_default(&sc, "api-initiated", api_context());
    assert_eq!(t.messages("info"), ["got 1 (max-digits)"]);
}

#[test]
fn record_takes_a_duration() {
    assert_eq!(
        first_command("- action: record@v1\n  params: { maxDuration: 60, finishOnKey: '*' }"),
        CommandKind::Record {
            max_duration_secs: 60,
            finish_on_key: Some("*".into()),
            transcription: None,
        }
    );
}

#[test]
fn recordings_may_ask_for_a_transcription() {
    assert_eq!(
        first_command(
            "- action: startRecording@v1\n  params: { transcription: { language: fr-FR } }"
        ),
        CommandKind::StartRecording {
            transcription: Some("fr-FR".into())
        }
    );
    // Without a language: the scenario's (fr-FR here), else en-US.
    assert_eq!(
        first_command("- action: record@v1\n  params: { maxDuration: 5, transcription: {} }"),
        CommandKind::Record {
            max_duration_secs: 5,
            finish_on_key: None,
            transcription: Some("fr-FR".into()),
        }
    );
    assert_eq!(
        first_command("- action: startRecording@v1"),
        CommandKind::StartRecording {
            transcription: None
        }
    );
}

#[test]
fn start_recording_ready_handler_runs_once() {
    let sc = api(
        "- action: startRecording@v1\n  events:\n    ready:\n      - action: log@v1\n        params: { message: 'ready ${{ recording.sid }} ${{ event.sid }}' }\n- action: wait@v1\n  params: { seconds: 1 }",
    );
    let limits = Limits::default();
    let step = start(&sc, "api-initiated", api_context(), &limits);
    assert_eq!(
        step.commands[0].kind,
        CommandKind::StartRecording {
            transcription: None
        }
    );
    let step = resume(
        &sc,
        step.state,
        Event::Result {
            fiber: 0,
            value: json!({"sid": "r1"}),
        },
        NOW,
        &limits,
    );
    assert_eq!(step.commands[0].kind, CommandKind::Wait { seconds: 1.0 });
    let step = resume(
        &sc,
        step.state,
        Event::Result {
            fiber: 0,
            value: json!(null),
        },
        NOW,
        &limits,
    );
    // the main branch is done, but the handler still waits for its event
    assert_eq!(step.outcome, Outcome::Waiting);
    let ready = Event::ActionEvent {
        fiber: 0,
        name: "ready".into(),
        value: json!({"sid": "r1"}),
    };
    let step = resume(&sc, step.state, ready.clone(), NOW, &limits);
    assert_eq!(step.outcome, Outcome::Completed, "{:?}", step.log);
    assert_eq!(step.log[0].message, "ready r1 r1");
    let again = resume(&sc, step.state, ready, NOW, &limits);
    assert_eq!(again.outcome, Outcome::Completed);
    assert_eq!(again.log[0].level, "warn");
}

#[test]
fn dial_targets_defaults_and_answered_branch() {
    assert_eq!(
        first_command(
            "- action: dial@v1\n  params: { targets: [ { number: '+447700900200' } ], from: '+447700900001' }"
        ),
        CommandKind::Dial {
            targets: vec![DialTarget {
                number: "+447700900200".into(),
                timeout_secs: 30
            }],
            answer_on_branch: None,
            from: Some("+447700900001".into())
        }
    );
    let sc = api(
        "- action: dial@v1\n  params: { targets: [ { number: +447700900200, timeout: 15 } ], answerOnBranch: other }\n  result: $dial",
    );
    let limits = Limits::default();
    let step = start(&sc, "api-initiated", api_context(), &limits);
    assert_eq!(
        step.commands[0].kind,
        CommandKind::Dial {
            targets: vec![DialTarget {
                number: "+447700900200".into(),
                timeout_secs: 15
            }],
            answer_on_branch: Some("other".into()),
            from: None
        }
    );
    let step = resume(
        &sc,
        step.state,
        Event::DialAnswered { fiber: 0 },
        NOW,
        &limits,
    );
    // the answered branch ran in fiber 1 (a log), then hung up its leg
    assert_eq!(step.log[0].message, "in other");
    assert_eq!(step.commands.len(), 1);
    assert_eq!(step.commands[0].fiber, 1);
    assert_eq!(step.commands[0].kind, CommandKind::Hangup);
    assert_eq!(step.state.fiber_origin(1), Some(0));
    let step = resume(
        &sc,
        step.state,
        Event::Result {
            fiber: 1,
            value: json!(null),
        },
        NOW,
        &limits,
    );
    assert_eq!(step.outcome, Outcome::Waiting);
    let step = resume(
        &sc,
        step.state,
        Event::Result {
            fiber: 0,
            value: json!({"ok": true, "status": "answered"}),
        },
        NOW,
        &limits,
    );
    assert_eq!(step.outcome, Outcome::Completed);
    assert_eq!(step.state.variables()["$dial"]["status"], "answered");
}

#[test]
fn bridge_has_no_parameters() {
    assert_eq!(first_command("- action: bridge@v1"), CommandKind::Bridge);
}

#[test]
fn sms_sends_to_a_list() {
    assert_eq!(
        first_command(
            "- action: sms@v1\n  params: { to: [ +447700900200, '${{ \"+44\" + \"7700900201\" }}' ], body: 'Code ${{ 6 * 7 }}', from: Dialtone }"
        ),
        CommandKind::SendSms {
            to: vec!["+447700900200".into(), "+447700900201".into()],
            body: "Code 42".into(),
            from: Some("Dialtone".into())
        }
    );
}

#[test]
fn fetch_v1_and_v2() {
    assert_eq!(
        first_command("- action: fetch@v1\n  params: { url: 'https://x.example/a' }"),
        CommandKind::Fetch {
            url: "https://x.example/a".into(),
            method: "GET".into(),
            headers: vec![],
            body: None,
            timeout_ms: 10_000,
            version: 1
        }
    );
    assert_eq!(
        first_command(
            "- action: fetch@v2\n  params:\n    url: https://x.example/b\n    method: post\n    headers: { Authorization: 'Bearer ${{ 1 + 1 }}' }\n    body: { n: '${{ 40 + 2 }}', s: text }\n    timeout: 2.5\n    audio: { enabled: false }"
        ),
        CommandKind::Fetch {
            url: "https://x.example/b".into(),
            method: "POST".into(),
            headers: vec![("Authorization".into(), "Bearer 2".into())],
            body: Some(r#"{"n":42,"s":"text"}"#.into()),
            timeout_ms: 2500,
            version: 2
        }
    );
}

#[test]
fn log_is_pure() {
    let sc =
        api("- action: log@v1\n  params: { message: 'run ${{ run.id }} of ${{ scenario.name }}' }");
    let step = start(&sc, "api-initiated", api_context(), &Limits::default());
    assert_eq!(step.outcome, Outcome::Completed);
    assert!(step.commands.is_empty());
    assert_eq!(step.log[0].message, "run api:1 of test");
    assert_eq!(step.log[0].level, "info");
    assert_eq!(step.log[0].at, NOW);
}

#[test]
fn javascript_sets_variables_and_returns_its_value() {
    let sc = api(
        "- action: javascript@v1\n  params:\n    code: |\n      let local = 2;\n      $total = ($base || 0) + local;\n      $list = [1, 2].map(x => x * $total);\n      console.log('total', $total, { ok: true });\n      delete $gone;\n      $total * 10\n  result: $value\n- action: log@v1\n  params: { message: '${{ $total }} ${{ $list }} ${{ typeof local }} ${{ $value }}' }",
    );
    let mut ctx = api_context();
    ctx.input.insert("base".into(), json!(3));
    ctx.input.insert("$gone".into(), json!("x"));
    let step = start(&sc, "api-initiated", ctx, &Limits::default());
    assert_eq!(step.outcome, Outcome::Completed, "{:?}", step.log);
    let vars = step.state.variables();
    assert_eq!(vars["$total"], 5);
    assert_eq!(vars["$list"], json!([5, 10]));
    assert_eq!(vars["$value"], 50);
    assert!(!vars.contains_key("$gone"));
    let lines: Vec<&str> = step.log.iter().map(|l| l.message.as_str()).collect();
    assert_eq!(lines, ["total 5 {\"ok\":true}", "5 5,10 undefined 50"]);
}

#[test]
fn wait_pauses() {
    assert_eq!(
        first_command("- action: wait@v1\n  params: { seconds: 1.5 }"),
        CommandKind::Wait { seconds: 1.5 }
    );
}

#[test]
fn if_then_goto_control_flow() {
    let sc = api(
        "- if: 'false'\n  then:\n    - action: log@v1\n      params: { message: skipped }\n- if: '1 + 1 === 2'\n  then:\n    - action: log@v1\n      params: { message: then ran }\n- if: $missing === undefined\n  action: log@v1\n  params: { message: guarded ran }\n- action: log@v1\n  params: { message: before goto }\n  goto: other\n- action: log@v1\n  params: { message: not reached }",
    );
    let step = start(&sc, "api-initiated", api_context(), &Limits::default());
    assert_eq!(step.outcome, Outcome::Completed, "{:?}", step.log);
    let lines: Vec<&str> = step.log.iter().map(|l| l.message.as_str()).collect();
    assert_eq!(
        lines,
        ["then ran", "guarded ran", "before goto", "in other"]
    );
}

#[test]
fn expressions_keep_types_and_see_predefined_values() {
    assert_eq!(
        first_command("- action: gather@v2\n  params: { maxDigits: '${{ 2 + 1 }}' }"),
        CommandKind::Gather {
            max_digits: 3,
            min_digits: 1,
            timeout_secs: 10,
            finish_on_key: None,
            prompt: None
        }
    );
    let sc = api(
        "- action: log@v1\n  params: { message: '${{ now.getUTCFullYear() }} ${{ now instanceof Date }} ${{ app.sid }} ${{ typeof call }} ${{ integrations.defaults !== undefined }}' }",
    );
    let step = start(&sc, "api-initiated", api_context(), &Limits::default());
    assert_eq!(step.log[0].message, "2026 true abcdef12 undefined true");
}

#[test]
fn runtime_errors_fail_the_run_with_their_position() {
    let sc = api(
        "- action: log@v1\n  params: { message: ok }\n- action: say@v2\n  params: { what: '${{ $nothing.deep }}' }",
    );
    let step = start(&sc, "api-initiated", api_context(), &Limits::default());
    match step.outcome {
        Outcome::Failed { error } => {
            assert!(error.contains("line 8"), "{error}");
            assert!(error.contains("TypeError"), "{error}");
        }
        other => panic!("{other:?}"),
    }
    let step = start(
        &api("- action: wait@v1\n  params: { seconds: '${{ \"soon\" }}' }"),
        "api-initiated",
        api_context(),
        &Limits::default(),
    );
    assert!(
        matches!(&step.outcome, Outcome::Failed { error } if error.contains("seconds")),
        "{:?}",
        step.outcome
    );
    assert!(step.commands.is_empty());
}

#[test]
fn stop_ends_the_run() {
    let sc = api("- action: wait@v1\n  params: { seconds: 60 }");
    let limits = Limits::default();
    let step = start(&sc, "api-initiated", api_context(), &limits);
    let step = resume(&sc, step.state, Event::Stop, NOW, &limits);
    assert_eq!(step.outcome, Outcome::Stopped);
    assert!(step.commands.is_empty());
    let after = resume(
        &sc,
        step.state,
        Event::Result {
            fiber: 0,
            value: json!(null),
        },
        NOW,
        &limits,
    );
    assert_eq!(after.outcome, Outcome::Stopped);
}

#[test]
fn call_ended_stops_call_actions_but_not_others() {
    let sc = parse(
        "branches:\n  inbound-call:\n    actions:\n      - action: say@v2\n        params: { what: hello }\n      - action: say@v2\n        params: { what: never }\n",
    );
    let limits = Limits::default();
    let step = start(&sc, "inbound-call", call_context(), &limits);
    assert_eq!(step.commands[0].kind, CommandKind::Answer);
    let step = resume(
        &sc,
        step.state,
        Event::Result {
            fiber: 0,
            value: json!(null),
        },
        NOW,
        &limits,
    );
    assert!(matches!(step.commands[0].kind, CommandKind::Say { .. }));
    let step = resume(&sc, step.state, Event::CallEnded, NOW, &limits);
    assert_eq!(step.outcome, Outcome::Completed);
    assert!(
        step.commands.is_empty(),
        "no implicit hangup once the call ended"
    );

    let sc = parse(
        "branches:\n  inbound-call:\n    actions:\n      - action: fetch@v2\n        params: { url: 'https://x.example' }\n        result: $r\n      - action: sms@v1\n        params: { to: [ '+447700900555' ], body: 'missed' }\n      - action: say@v2\n        params: { what: never }\n      - action: log@v1\n        params: { message: never }\n",
    );
    let step = start(&sc, "inbound-call", call_context(), &limits);
    let step = resume(
        &sc,
        step.state,
        Event::Result {
            fiber: 0,
            value: json!(null),
        },
        NOW,
        &limits,
    );
    assert!(matches!(step.commands[0].kind, CommandKind::Fetch { .. }));
    let step = resume(&sc, step.state, Event::CallEnded, NOW, &limits);
    assert_eq!(step.outcome, Outcome::Waiting);
    let step = resume(
        &sc,
        step.state,
        Event::Result {
            fiber: 0,
            value: json!({"ok": true}),
        },
        NOW,
        &limits,
    );
    assert!(matches!(step.commands[0].kind, CommandKind::SendSms { .. }));
    let step = resume(
        &sc,
        step.state,
        Event::Result {
            fiber: 0,
            value: json!({"ok": true}),
        },
        NOW,
        &limits,
    );
    assert_eq!(step.outcome, Outcome::Completed);
    assert!(step.commands.is_empty());
    assert!(step.log.iter().all(|l| l.message != "never"));
}

#[test]
fn inbound_call_is_answered_and_hung_up_implicitly() {
    let sc = parse(
        "branches:\n  inbound-call:\n    actions:\n      - action: log@v1\n        params: { message: hi }\n",
    );
    let t = drive_default(&sc, "inbound-call", call_context());
    assert_eq!(t.kinds(), ["answer", "hangup"]);
    assert_eq!(t.outcome, Outcome::Completed);
    // no call in the context: no implicit answer nor hangup
    let t = drive_default(&sc, "inbound-call", api_context());
    assert!(t.commands.is_empty());
}

#[test]
fn stray_results_and_unknown_branches() {
    let sc = api("- action: wait@v1\n  params: { seconds: 1 }");
    let limits = Limits::default();
    let step = start(&sc, "api-initiated", api_context(), &limits);
    let step = resume(
        &sc,
        step.state,
        Event::Result {
            fiber: 9,
            value: json!(null),
        },
        NOW,
        &limits,
    );
    assert_eq!(step.outcome, Outcome::Waiting);
    assert_eq!(step.log[0].level, "warn");
    let step = start(&sc, "nope", api_context(), &limits);
    assert!(matches!(step.outcome, Outcome::Failed { .. }));
}

#[test]
fn start_branch_continues_a_run_with_its_variables() {
    let sc = parse(
        "branches:\n  inbound-call:\n    actions:\n      - action: gather@v2\n        params: { maxDigits: 1 }\n        result: $dtmf\n  hangup:\n    actions:\n      - action: log@v1\n        params: { message: 'pressed ${{ $dtmf.digits }}' }\n",
    );
    let limits = Limits::default();
    let t = drive(&sc, "inbound-call", call_context(), |c| match c.kind {
        CommandKind::Gather { .. } => vec![
            Event::Result {
                fiber: c.fiber,
                value: json!({"digits": "7"}),
            },
            Event::CallEnded,
        ],
        _ => vec![Event::Result {
            fiber: c.fiber,
            value: json!(null),
        }],
    });
    let step = dialtone_actions::start_branch(&sc, t.state, "hangup", NOW, &limits);
    assert_eq!(step.outcome, Outcome::Completed, "{:?}", step.log);
    assert_eq!(step.log[0].message, "pressed 7");
}

#[test]
fn scenario_accessors() {
    let sc = parse_scenario("description: d\nvariables: { $a: 1 }\ndefaults: { autoAnswer: false }\nbranches: { x: { actions: [] } }").expect("valid");
    assert_eq!(sc.description(), Some("d"));
    assert!(!sc.default_auto_answer());
    assert_eq!(sc.default_language(), None);
    assert!(sc.has_branch("x"));
    assert!(!sc.has_branch("y"));
    assert_eq!(sc.variables()["$a"], 1);
}

#[test]
fn protocol_types_serialize_with_a_type_tag() {
    let command = dialtone_actions::Command {
        fiber: 2,
        kind: CommandKind::SendSms {
            to: vec!["+447700900555".into()],
            body: "hi".into(),
            from: None,
        },
    };
    assert_eq!(
        serde_json::to_value(&command).expect("serializes"),
        json!({"fiber": 2, "kind": {"type": "sendSms", "to": ["+447700900555"], "body": "hi", "from": null}})
    );
    assert_eq!(
        serde_json::to_value(CommandKind::Gather {
            max_digits: 1,
            min_digits: 1,
            timeout_secs: 10,
            finish_on_key: None,
            prompt: Some(("Press 1".into(), None))
        })
        .expect("serializes"),
        json!({"type": "gather", "maxDigits": 1, "minDigits": 1, "timeoutSecs": 10, "finishOnKey": null, "prompt": ["Press 1", null]})
    );
    let event: Event =
        serde_json::from_value(json!({"type": "result", "fiber": 0, "value": {"ok": true}}))
            .expect("event");
    assert_eq!(
        event,
        Event::Result {
            fiber: 0,
            value: json!({"ok": true})
        }
    );
    let event: Event = serde_json::from_value(
        json!({"type": "actionEvent", "fiber": 1, "name": "ready", "value": null}),
    )
    .expect("event");
    assert!(matches!(event, Event::ActionEvent { .. }));
    assert_eq!(
        serde_json::to_value(Outcome::Failed { error: "x".into() }).expect("outcome"),
        json!({"type": "failed", "error": "x"})
    );
    assert_eq!(
        serde_json::to_value(Outcome::Waiting).expect("outcome"),
        json!({"type": "waiting"})
    );
}
