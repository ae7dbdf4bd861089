//! A scripted driver: plays the server's part of the protocol without a server.

#![allow(dead_code)]

use std::collections::VecDeque;

use dialtone_actions::{
    Command, Context, Event, Limits, LogEntry, Outcome, RunState, Scenario, Step, parse_scenario,
    resume, start,
};
use serde_json::{Map, Value, json};

pub(crate) const NOW: &str = "2026-01-02T03:04:05.000Z";

/// What a scripted run did.
#[derive(Debug)]
pub(crate) struct Trace {
    pub commands: Vec<Command>,
    pub log: Vec<LogEntry>,
    pub outcome: Outcome,
    pub state: RunState,
    pub steps: usize,
}

impl Trace {
    pub(crate) fn messages(&self, level: &str) -> Vec<String> {
        self.log
            .iter()
            .filter(|l| l.level == level)
            .map(|l| l.message.clone())
            .collect()
    }

    pub(crate) fn kinds(&self) -> Vec<String> {
        self.commands
            .iter()
            .map(|c| {
                serde_json::to_value(&c.kind).expect("serializable")["type"]
                    .as_str()
                    .unwrap_or("?")
                    .to_string()
            })
            .collect()
    }
}

pub(crate) fn load_fixture(name: &str) -> Scenario {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).expect("fixture exists");
    parse_scenario(&text).unwrap_or_else(|e| panic!("{name}: {e}"))
}

pub(crate) fn parse(yaml: &str) -> Scenario {
    parse_scenario(yaml).unwrap_or_else(|e| panic!("{e}"))
}

pub(crate) fn api_context() -> Context {
    Context {
        now: NOW.into(),
        run: json!({"id": "api:1", "type": "api"}),
        scenario: json!({"sid": "abcdef12", "name": "test"}),
        call: None,
        sms: None,
        input: Map::new(),
    }
}

pub(crate) fn call_context() -> Context {
    Context {
        now: NOW.into(),
        run: json!({"id": "inbound-call:42", "type": "inbound-call"}),
        scenario: json!({"sid": "abcdef12", "name": "test"}),
        call: Some(json!({
            "fromNumber": "+447700900555",
            "toNumber": "+447700900123",
            "fromType": "MOBILE",
            "callid": 42,
            "cdr": {"callid": 42, "direction": "inbound", "callerNumber": "+447700900555"}
        })),
        sms: None,
        input: Map::new(),
    }
}

pub(crate) fn sms_context() -> Context {
    Context {
        now: NOW.into(),
        run: json!({"id": "inbound-sms:7", "type": "inbound-sms"}),
        scenario: json!({"sid": "abcdef12", "name": "test"}),
        call: None,
        sms: Some(json!({
            "sid": "smssid01", "direction": "inbound", "fromNumber": "+447700900555",
            "toNumber": "+447700900123", "bodyText": "Hello", "encoding": "gsm", "parts": 1
        })),
        input: Map::new(),
    }
}

/// A plausible result for each command.
pub(crate) fn default_result(c: &Command) -> Value {
    use dialtone_actions::CommandKind::*;
    match &c.kind {
        Gather { .. } => json!({"digits": "1", "reason": "max-digits"}),
        Dial { targets, .. } => {
            json!({"ok": true, "status": "answered", "target": targets[0].number})
        }
        SendSms { to, .. } => {
            json!({"ok": true, "sids": to.iter().map(|_| "sms00001").collect::<Vec<_>>()})
        }
        Fetch { .. } => {
            json!({"ok": true, "status": 200, "statusText": "OK", "headers": {}, "body": "{\"results\":[{\"name\":{\"first\":\"Ada\"}}]}", "json": {"results": [{"name": {"title": "Ms", "first": "Ada", "last": "Lovelace"}, "location": {"city": "London", "country": "UK"}}]}})
        }
        Record { .. } | StartRecording { .. } => json!({"sid": "rec00001", "duration": 3}),
        _ => Value::Null,
    }
}

/// Answers every command with `respond`, round-tripping the state through JSON between steps.
pub(crate) fn drive(
    scenario: &Scenario,
    branch: &str,
    ctx: Context,
    mut respond: impl FnMut(&Command) -> Vec<Event>,
) -> Trace {
    let limits = Limits::default();
    let mut step: Step = start(scenario, branch, ctx, &limits);
    let mut trace = Trace {
        commands: Vec::new(),
        log: Vec::new(),
        outcome: Outcome::Waiting,
        state: step.state.clone(),
        steps: 1,
    };
    let mut queue = VecDeque::new();
    loop {
        trace.commands.extend(step.commands.iter().cloned());
        trace.log.extend(step.log.iter().cloned());
        for c in &step.commands {
            queue.extend(respond(c));
        }
        trace.outcome = step.outcome.clone();
        trace.state = step.state.clone();
        if step.outcome != Outcome::Waiting {
            break;
        }
        let Some(event) = queue.pop_front() else {
            break;
        };
        let json = serde_json::to_string(&step.state).expect("state serializes");
        let state: RunState = serde_json::from_str(&json).expect("state deserializes");
        step = resume(scenario, state, event, NOW, &limits);
        trace.steps += 1;
        assert!(trace.steps < 1000, "runaway driver");
    }
    trace
}

/// Drives with [`default_result`] for every command.
pub(crate) fn drive_default(scenario: &Scenario, branch: &str, ctx: Context) -> Trace {
    drive(scenario, branch, ctx, |c| {
        vec![Event::Result {
            fiber: c.fiber,
            value: default_result(c),
        }]
    })
}
