//! Sandbox limits, goto loops, isolation between runs, and run state persistence.

#![allow(
    clippy::unwrap_used,
    clippy::too_many_lines,
    reason = "tests: a failed unwrap is a failed test, and a scenario reads best whole"
)]

mod common;

use std::time::{Duration, Instant};

use common::*;
use dialtone_actions::{Event, Limits, Outcome, RunState, parse_scenario, resume, start};
use serde_json::json;

fn api(entries: &str) -> dialtone_actions::Scenario {
    parse(&format!(
        "branches:\n  api-initiated:\n    actions:\n{}\n",
        entries
            .lines()
            .map(|l| format!("      {l}"))
            .collect::<Vec<_>>()
            .join("\n")
    ))
}

fn failure(step: &dialtone_actions::Step) -> String {
    match &step.outcome {
        Outcome::Failed { error } => error.clone(),
        other => panic!("expected a failure, got {other:?}: {:?}", step.log),
    }
}

#[test]
fn an_infinite_loop_fails_quickly_on_cpu_time() {
    let sc = api("- action: javascript@v1\n  params: { code: 'while (true) {}' }");
    let started = Instant::now();
    let step = start(&sc, "api-initiated", api_context(), &Limits::default());
    let error = failure(&step);
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    assert!(error.contains("CPU time limit of 100 ms"), "{error}");
    // a loop the script tries to catch is still stopped
    let sc = api(
        "- action: log@v1\n  params: { message: '${{ (() => { try { while (true) {} } catch (e) { return 1 } })() }}' }",
    );
    let error = failure(&start(
        &sc,
        "api-initiated",
        api_context(),
        &Limits::default(),
    ));
    assert!(error.contains("CPU time limit"), "{error}");
    // the thread's sandbox works again afterwards
    let ok = api("- action: log@v1\n  params: { message: '${{ 1 + 1 }}' }");
    let step = start(&ok, "api-initiated", api_context(), &Limits::default());
    assert_eq!(step.outcome, Outcome::Completed);
    assert_eq!(step.log[0].message, "2");
}

/// A catastrophic regular expression (exponential backtracking) stops at the CPU limit like
/// any other script: the regex engine polls the same interrupt.
#[test]
fn a_catastrophic_regular_expression_stops_at_the_cpu_limit() {
    for expr in [
        "/(a+)+$/.test('a'.repeat(27) + 'b')",
        "'a'.repeat(30).concat('!').replace(/^(a|a)+$/, 'x')",
        "new RegExp('(x+x+)+y').exec('x'.repeat(40))",
    ] {
        let sc = api(&format!(
            "- action: log@v1\n  params: {{ message: \"${{{{ {expr} }}}}\" }}"
        ));
        let started = Instant::now();
        let error = failure(&start(
            &sc,
            "api-initiated",
            api_context(),
            &Limits::default(),
        ));
        let took = started.elapsed();
        assert!(
            error.contains("CPU time limit of 100 ms"),
            "{expr}: {error}"
        );
        assert!(took < Duration::from_millis(1_000), "{expr}: {took:?}");
    }
    let ok = api("- action: log@v1\n  params: { message: '${{ /^[0-9]+$/.test(\"123\") }}' }");
    let step = start(&ok, "api-initiated", api_context(), &Limits::default());
    assert_eq!(step.outcome, Outcome::Completed);
    assert_eq!(step.log[0].message, "true");
}

#[test]
fn the_cpu_limit_is_configurable() {
    let sc = api(
        "- action: javascript@v1\n  params: { code: 'const end = Date.now() + 50; while (Date.now() < end) {}' }",
    );
    let limits = Limits {
        cpu_time: Duration::from_millis(10),
        ..Limits::default()
    };
    let error = failure(&start(&sc, "api-initiated", api_context(), &limits));
    assert!(error.contains("CPU time limit of 10 ms"), "{error}");
    let step = start(&sc, "api-initiated", api_context(), &Limits::default());
    assert_eq!(step.outcome, Outcome::Completed, "{:?}", step.log);
}

#[test]
fn memory_hogs_fail_on_the_memory_limit() {
    let sc = api(
        "- action: javascript@v1\n  params: { code: 'const a = []; while (true) { a.push(new Array(100000).fill(1.5)); }' }",
    );
    let error = failure(&start(
        &sc,
        "api-initiated",
        api_context(),
        &Limits::default(),
    ));
    assert!(error.contains("memory limit of 8388608 bytes"), "{error}");
    let big = api(
        "- action: javascript@v1\n  params: { code: '$s = \"x\".repeat(1024 * 1024); $s.length' }\n  result: $n",
    );
    let step = start(&big, "api-initiated", api_context(), &Limits::default());
    assert_eq!(step.outcome, Outcome::Completed, "{:?}", step.log);
    let small = Limits {
        memory_bytes: 512 * 1024,
        ..Limits::default()
    };
    let error = failure(&start(&big, "api-initiated", api_context(), &small));
    assert!(error.contains("memory limit"), "{error}");
}

#[test]
fn goto_loops_are_stopped() {
    let sc = parse(
        "branches:\n  api-initiated:\n    actions:\n      - goto: again\n  again:\n    actions:\n      - action: log@v1\n        params: { message: spin }\n        goto: api-initiated\n",
    );
    let limits = Limits {
        max_steps: 500,
        ..Limits::default()
    };
    let error = failure(&start(&sc, "api-initiated", api_context(), &limits));
    assert!(error.contains("more than 500 entries"), "{error}");
}

#[test]
fn a_run_cannot_change_what_the_next_one_sees() {
    let evil = api(
        "- action: javascript@v1\n  params:\n    code: |\n      try { Array.prototype.map = () => 'pwned'; } catch (e) {}\n      try { JSON.stringify = () => 'pwned'; } catch (e) {}\n      try { Object.prototype.polluted = 1; } catch (e) {}\n      leaked = 'yes';\n      globalThis.leaked2 = 'yes';\n      var declared = 'yes';\n      try { arguments.callee.stash = 'yes'; } catch (e) {}\n      try { console.log.stash = 'yes'; } catch (e) {}\n      $mine = 'secret';",
    );
    let step = start(&evil, "api-initiated", api_context(), &Limits::default());
    assert_eq!(step.outcome, Outcome::Completed, "{:?}", step.log);
    let probe = api(
        "- action: log@v1\n  params:\n    message: '${{ [1].map(x => x + 1) }} ${{ JSON.stringify({a: 1}) }} ${{ ({}).polluted }} ${{ typeof leaked }} ${{ typeof leaked2 }} ${{ typeof declared }} ${{ console.log.stash }} ${{ typeof $mine }}'",
    );
    let step = start(&probe, "api-initiated", api_context(), &Limits::default());
    assert_eq!(
        step.log[0].message,
        "2 {\"a\":1} undefined undefined undefined undefined undefined undefined"
    );
}

#[test]
fn no_io_in_the_sandbox() {
    let sc = api(
        "- action: log@v1\n  params: { message: '${{ typeof require }} ${{ typeof std }} ${{ typeof os }} ${{ typeof fetch }} ${{ typeof XMLHttpRequest }}' }",
    );
    let step = start(&sc, "api-initiated", api_context(), &Limits::default());
    assert_eq!(
        step.log[0].message,
        "undefined undefined undefined undefined undefined"
    );
    let sc = api("- action: javascript@v1\n  params: { code: 'import(\"os\")' }");
    let step = start(&sc, "api-initiated", api_context(), &Limits::default());
    // a dynamic import has no loader: it cannot reach anything (it leaves a promise, which
    // costs the thread a fresh sandbox but nothing else)
    assert!(matches!(
        step.outcome,
        Outcome::Completed | Outcome::Failed { .. }
    ));
}

const MID_RUN: &str = "variables: { $n: 1 }\nbranches:\n  api-initiated:\n    actions:\n      - action: fetch@v2\n        params: { url: 'https://x.example/${{ $n }}' }\n        result: $a\n      - action: javascript@v1\n        params: { code: '$n = $n + $a.status' }\n      - action: startRecording@v1\n        events:\n          ready:\n            - action: sms@v1\n              params: { to: [ '+447700900555' ], body: 'rec ${{ recording.sid }} n=${{ $n }}' }\n      - action: wait@v1\n        params: { seconds: '${{ $n / 100 }}' }\n";

#[test]
fn run_state_round_trips_and_resumes_identically() {
    let sc = parse_scenario(MID_RUN).expect("valid");
    let limits = Limits::default();
    let step = start(&sc, "api-initiated", api_context(), &limits);
    let step = resume(
        &sc,
        step.state,
        Event::Result {
            fiber: 0,
            value: json!({"ok": true, "status": 200}),
        },
        NOW,
        &limits,
    );
    assert_eq!(step.outcome, Outcome::Waiting);
    let mid = step.state;
    let json = serde_json::to_string(&mid).expect("serializes");
    let restored: RunState = serde_json::from_str(&json).expect("deserializes");
    assert_eq!(restored, mid);
    assert_eq!(restored.variables()["$n"], 201);
    let events = [
        Event::Result {
            fiber: 0,
            value: json!({"sid": "rec9"}),
        },
        Event::ActionEvent {
            fiber: 0,
            name: "ready".into(),
            value: json!({"sid": "rec9"}),
        },
        Event::Result {
            fiber: 1,
            value: json!({"ok": true, "sids": ["s1"]}),
        },
        Event::Result {
            fiber: 0,
            value: json!(null),
        },
    ];
    let (mut a, mut b) = (mid, restored);
    for event in events {
        let sa = resume(&sc, a, event.clone(), NOW, &limits);
        let sb = resume(&sc, b, event, NOW, &limits);
        assert_eq!(sa, sb);
        let text = serde_json::to_string(&sb.state).expect("serializes");
        a = sa.state;
        b = serde_json::from_str(&text).expect("deserializes");
    }
    assert_eq!(a.outcome(), Some(&Outcome::Completed));
}

#[test]
fn a_changed_scenario_cannot_resume_a_run() {
    let sc = parse_scenario(MID_RUN).expect("valid");
    let limits = Limits::default();
    let step = start(&sc, "api-initiated", api_context(), &limits);
    let other = parse_scenario(&MID_RUN.replace("$n: 1", "$n: 2")).expect("valid");
    let step = resume(
        &other,
        step.state,
        Event::Result {
            fiber: 0,
            value: json!({}),
        },
        NOW,
        &limits,
    );
    assert!(failure(&step).contains("scenario changed"));
}

#[test]
fn runs_on_many_threads() {
    let sc = parse_scenario(MID_RUN).expect("valid");
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                for _ in 0..50 {
                    let t = drive_default(&sc, "api-initiated", api_context());
                    assert_eq!(t.outcome, Outcome::Waiting, "the ready handler still waits");
                    assert_eq!(t.kinds(), ["fetch", "startRecording", "wait"]);
                }
            });
        }
    });
}
