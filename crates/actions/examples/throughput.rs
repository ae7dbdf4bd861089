//! Throughput of the interpreter: runs of a 10-step `api-initiated` scenario with expressions,
//! driven to completion on several threads, the state stored as JSON between steps as the
//! server does.
//!
//! `cargo run --release -p dialtone-actions --example throughput -- [threads] [runs per thread]`

use std::time::Instant;

use dialtone_actions::{
    CommandKind, Context, Event, Limits, Outcome, RunState, parse_scenario, resume, start,
};
use serde_json::{Map, json};

const SCENARIO: &str = r#"
description: throughput probe
variables:
  $base: https://hooks.example.org
  $count: 0
branches:
  api-initiated:
    actions:
      - action: log@v1
        params: { message: "run ${{ run.id }} started at ${{ now.toISOString() }}" }
      - action: javascript@v1
        params: { code: "$count = $count + 1; $to = '+4477009001' + String($count).padStart(2, '0')" }
      - action: fetch@v2
        params: { url: "${{ $base }}/lookup?n=${{ encodeURIComponent($to) }}", method: GET, timeout: 2 }
        result: $lookup
      - if: "$lookup.ok && $lookup.status === 200"
        then:
          - action: log@v1
            params: { message: "lookup ok: ${{ $lookup.json.name }}" }
      - action: sms@v1
        params:
          to: [ "${{ $to }}" ]
          body: "Hello ${{ $lookup.json.name }}, your code is ${{ ($count * 7919) % 10000 }}"
        result: $sms
      - if: "!$sms.ok"
        goto: { branch: failed }
      - action: fetch@v2
        params:
          url: "${{ $base }}/done"
          method: POST
          headers: { content-type: application/json }
          body: "${{ JSON.stringify({ run: run.id, sms: $sms.sids }) }}"
        result: $done
      - action: log@v1
        params: { message: "done ${{ $done.status }}" }
  failed:
    actions:
      - action: log@v1
        params: { message: "sms failed" }
"#;

fn run_once(scenario: &dialtone_actions::Scenario, i: usize, limits: &Limits) -> usize {
    let now = "2026-01-02T03:04:05.000Z";
    let ctx = Context {
        now: now.into(),
        run: json!({"id": format!("api:{i}"), "type": "api"}),
        scenario: json!({"sid": "abcdef12", "name": "probe"}),
        call: None,
        sms: None,
        input: Map::new(),
    };
    let mut step = start(scenario, "api-initiated", ctx, limits);
    let mut batches = 1;
    while step.outcome == Outcome::Waiting {
        let Some(command) = step.commands.first() else {
            break;
        };
        let value = match &command.kind {
            CommandKind::Fetch { .. } => {
                json!({"ok": true, "status": 200, "statusText": "OK", "headers": {}, "body": "{}", "json": {"name": "Ada"}})
            }
            CommandKind::SendSms { .. } => json!({"ok": true, "sids": ["sms00001"]}),
            _ => json!(null),
        };
        let fiber = command.fiber;
        let stored = serde_json::to_string(&step.state).expect("state serializes");
        let state: RunState = serde_json::from_str(&stored).expect("state deserializes");
        step = resume(scenario, state, Event::Result { fiber, value }, now, limits);
        batches += 1;
    }
    assert_eq!(step.outcome, Outcome::Completed, "{:?}", step.log);
    batches
}

fn main() {
    let mut args = std::env::args().skip(1);
    let threads: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(2);
    let runs: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(20_000);
    let scenario = parse_scenario(SCENARIO).expect("scenario parses");
    let limits = Limits::default();
    // warm up every thread's sandbox outside the measurement
    let started = Instant::now();
    let batches: usize = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let scenario = &scenario;
                let limits = &limits;
                s.spawn(move || {
                    let mut batches = 0;
                    for i in 0..runs {
                        batches += run_once(scenario, t * runs + i, limits);
                    }
                    batches
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("thread")).sum()
    });
    let elapsed = started.elapsed().as_secs_f64();
    let total = threads * runs;
    println!(
        "{total} runs ({batches} start/resume calls) on {threads} threads in {elapsed:.2} s: {:.0} runs/s, {:.0} calls/s",
        total as f64 / elapsed,
        batches as f64 / elapsed
    );
}
