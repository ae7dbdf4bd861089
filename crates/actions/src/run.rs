//! The step-by-step executor: `start`, `resume` and `start_branch`.
//!
//! A run is a set of fibers, each walking action lists. A fiber runs until it issues a command
//! (then waits for that command's `Event::Result`) or ends. Pure actions (`log@v1`,
//! `javascript@v1`), `if`, `then` and `goto` run inside the call. See the crate README for the
//! driver protocol.

use std::collections::{HashSet, VecDeque};

use serde_json::{Map, Value};

use crate::catalog::Kind;
use crate::commands;
use crate::protocol::{Command, CommandKind, Context, Event, Limits, LogEntry, Outcome, Step};
use crate::sandbox::{Bindings, JsError, Session};
use crate::scenario::{ActionCall, Entry, ListId, Scenario};
use crate::state::{Fiber, Frame, Handler, Phase, RunState, Waiting};
use crate::template::{Part, Template};

/// Starts a run of `scenario` on `branch`.
///
/// With a `call` in the context (and a branch other than `hangup`) fiber 0 controls that call:
/// on `inbound-call` with `autoAnswer` (the default) the first command is `Answer`, and when
/// the branch ends with the call still up the interpreter issues `Hangup`.
pub fn start(scenario: &Scenario, branch: &str, ctx: Context, limits: &Limits) -> Step {
    let mut variables = scenario.variables();
    for (name, value) in ctx.input {
        let name = if name.starts_with('$') {
            name
        } else {
            format!("${name}")
        };
        variables.insert(name, value);
    }
    let has_call = ctx.call.is_some() && branch != "hangup";
    let state = RunState {
        scenario_fingerprint: scenario.fingerprint.clone(),
        branch: branch.to_string(),
        run: ctx.run,
        scenario: ctx.scenario,
        call: ctx.call,
        sms: ctx.sms,
        variables,
        fibers: Vec::new(),
        next_fiber: 0,
        handlers: Vec::new(),
        call_ended: branch == "hangup",
        steps_total: 0,
        finished: None,
    };
    let mut exec = Exec::new(scenario, state, &ctx.now, limits);
    let Some(&list) = scenario.branches.get(branch) else {
        exec.fail(format!("the scenario has no branch `{branch}`"));
        return exec.finish();
    };
    let id = exec.new_fiber(list, has_call, None, Map::new());
    if has_call && branch == "inbound-call" && scenario.auto_answer {
        exec.issue(id, CommandKind::Answer, Waiting::ImplicitAnswer);
    } else {
        exec.queue.push_back(id);
    }
    exec.run_queue();
    exec.finish()
}

/// Starts another branch inside an existing run, in a new fiber that sees the run's variables
/// (e.g. the `hangup` branch after `CallEnded`, so it can read what the call collected).
pub fn start_branch(
    scenario: &Scenario,
    state: RunState,
    branch: &str,
    now: &str,
    limits: &Limits,
) -> Step {
    let mut exec = Exec::new(scenario, state, now, limits);
    if exec.check_resumable() {
        match scenario.branches.get(branch) {
            Some(&list) => {
                exec.state.finished = None;
                if branch == "hangup" {
                    exec.state.call_ended = true;
                }
                let id = exec.new_fiber(list, false, None, Map::new());
                exec.queue.push_back(id);
                exec.run_queue();
            }
            None => exec.fail(format!("the scenario has no branch `{branch}`")),
        }
    }
    exec.finish()
}

/// Feeds one event to a run and runs it until it waits again or ends.
pub fn resume(
    scenario: &Scenario,
    state: RunState,
    event: Event,
    now: &str,
    limits: &Limits,
) -> Step {
    let mut exec = Exec::new(scenario, state, now, limits);
    if !exec.check_resumable() {
        return exec.finish();
    }
    if exec.state.finished.is_some() {
        exec.note(
            "warn",
            format!("event ignored: the run is already over ({event:?})"),
        );
        return exec.finish();
    }
    match event {
        Event::Result { fiber, value } => exec.on_result(fiber, value),
        Event::CallEnded => exec.on_call_ended(),
        Event::DialAnswered { fiber } => exec.on_dial_answered(fiber),
        Event::ActionEvent { fiber, name, value } => exec.on_action_event(fiber, &name, value),
        Event::Stop => {
            exec.state.fibers.clear();
            exec.state.handlers.clear();
            exec.state.finished = Some(Outcome::Stopped);
            exec.note("info", "run stopped".to_string());
        }
    }
    exec.run_queue();
    exec.finish()
}

/// Values only some fibers have (event handlers).
const LOCALS: [&str; 2] = ["event", "recording"];

enum ActionDone {
    /// The action finished here with this result.
    Value(Value),
    /// A command was issued; the fiber waits.
    Waiting,
    /// The fiber ends (a call action after the call ended).
    EndFiber,
}

struct Exec<'a> {
    scenario: &'a Scenario,
    state: RunState,
    now: String,
    limits: &'a Limits,
    session: Option<Session>,
    /// Names bound into the batch's scope so far, and the fiber whose locals they hold.
    bound: HashSet<String>,
    locals_of: Option<u32>,
    queue: VecDeque<u32>,
    commands: Vec<Command>,
    log: Vec<LogEntry>,
    steps: usize,
}

impl<'a> Exec<'a> {
    fn new(scenario: &'a Scenario, state: RunState, now: &str, limits: &'a Limits) -> Self {
        Exec {
            scenario,
            state,
            now: now.to_string(),
            limits,
            session: None,
            bound: HashSet::new(),
            locals_of: None,
            queue: VecDeque::new(),
            commands: Vec::new(),
            log: Vec::new(),
            steps: 0,
        }
    }

    fn check_resumable(&mut self) -> bool {
        if self.state.scenario_fingerprint != self.scenario.fingerprint {
            if self.state.finished.is_none() {
                self.fail(
                    "the scenario changed since the run started; it cannot be resumed".into(),
                );
            }
            return false;
        }
        true
    }

    fn note(&mut self, level: &str, message: String) {
        self.log.push(LogEntry {
            at: self.now.clone(),
            message,
            level: level.to_string(),
        });
    }

    fn fail(&mut self, error: String) {
        if self.state.finished.is_none() {
            self.note("error", error.clone());
            self.state.finished = Some(Outcome::Failed { error });
            self.state.fibers.clear();
            self.state.handlers.clear();
            self.queue.clear();
            self.commands.clear();
        }
    }

    fn new_fiber(
        &mut self,
        list: ListId,
        owns_call: bool,
        origin: Option<u32>,
        locals: Map<String, Value>,
    ) -> u32 {
        let id = self.state.next_fiber;
        self.state.next_fiber += 1;
        self.state.fibers.push(Fiber {
            id,
            frames: vec![Frame {
                list,
                index: 0,
                phase: Phase::Start,
            }],
            waiting: None,
            owns_call,
            origin,
            locals,
        });
        id
    }

    fn issue(&mut self, fiber: u32, kind: CommandKind, waiting: Waiting) {
        if let Some(f) = self.state.fibers.iter_mut().find(|f| f.id == fiber) {
            f.waiting = Some(waiting);
        }
        self.commands.push(Command { fiber, kind });
    }

    // ---- events ----

    fn on_result(&mut self, fiber: u32, value: Value) {
        let Some(pos) = self.state.fibers.iter().position(|f| f.id == fiber) else {
            self.note(
                "warn",
                format!("result ignored: fiber {fiber} is not running"),
            );
            return;
        };
        let waiting = self.state.fibers[pos].waiting.take();
        match waiting {
            None => {
                self.note(
                    "warn",
                    format!("result ignored: fiber {fiber} waits for nothing"),
                );
            }
            Some(Waiting::ImplicitAnswer) => self.queue.push_back(fiber),
            Some(Waiting::ImplicitHangup) => self.after_hangup(fiber),
            Some(Waiting::Action { hangup, .. }) => {
                let result = self
                    .current_entry(pos)
                    .and_then(|e| e.action.as_ref())
                    .and_then(|a| a.result.clone());
                if let Some(name) = result {
                    self.set_variable(&name, value);
                }
                if hangup {
                    self.after_hangup(fiber);
                } else {
                    self.queue.push_back(fiber);
                }
            }
        }
    }

    /// A fiber's hangup is done: its leg is gone. The run's own call going away ends every
    /// branch; an answered leg going away ends only its fiber.
    fn after_hangup(&mut self, fiber: u32) {
        let origin = self
            .state
            .fibers
            .iter()
            .find(|f| f.id == fiber)
            .and_then(|f| f.origin);
        if origin.is_none() {
            self.state.call_ended = true;
            self.state.fibers.clear();
            self.queue.clear();
        } else {
            self.state.fibers.retain(|f| f.id != fiber);
        }
    }

    fn on_call_ended(&mut self) {
        self.state.call_ended = true;
        let scenario = self.scenario;
        let mut ended = Vec::new();
        for f in &mut self.state.fibers {
            f.owns_call = false;
            let on_call = match &f.waiting {
                Some(Waiting::ImplicitAnswer) | Some(Waiting::ImplicitHangup) => true,
                Some(Waiting::Action { .. }) => f
                    .frames
                    .last()
                    .and_then(|fr| scenario.entry(fr.list, fr.index))
                    .and_then(|e| e.action.as_ref())
                    .is_some_and(|a| a.spec.kind.needs_call()),
                None => false,
            };
            if on_call {
                ended.push(f.id);
            }
        }
        self.state.fibers.retain(|f| !ended.contains(&f.id));
        self.note("debug", "call ended".to_string());
    }

    fn on_dial_answered(&mut self, fiber: u32) {
        let branch = self
            .state
            .fibers
            .iter_mut()
            .find(|f| f.id == fiber)
            .and_then(|f| match &mut f.waiting {
                Some(Waiting::Action {
                    answer_on_branch: Some(branch),
                    answered,
                    ..
                }) if !*answered => {
                    *answered = true;
                    Some(branch.clone())
                }
                _ => None,
            });
        let Some(branch) = branch else {
            self.note(
                "warn",
                format!(
                    "DialAnswered ignored: fiber {fiber} waits for no dial with answerOnBranch"
                ),
            );
            return;
        };
        match self.scenario.branches.get(&branch) {
            Some(&list) => {
                let id = self.new_fiber(list, true, Some(fiber), Map::new());
                self.queue.push_back(id);
            }
            None => self.fail(format!(
                "answerOnBranch names the missing branch `{branch}`"
            )),
        }
    }

    fn on_action_event(&mut self, fiber: u32, name: &str, value: Value) {
        let Some(pos) = self
            .state
            .handlers
            .iter()
            .position(|h| h.fiber == fiber && h.name == name)
        else {
            self.note(
                "warn",
                format!("event `{name}` of fiber {fiber} ignored: no handler waits for it"),
            );
            return;
        };
        let handler = self.state.handlers.remove(pos);
        let origin = self
            .state
            .fibers
            .iter()
            .find(|f| f.id == fiber)
            .and_then(|f| f.origin);
        let mut locals = Map::new();
        locals.insert("event".into(), value.clone());
        locals.insert(handler.binds.clone(), value);
        let id = self.new_fiber(handler.list, false, origin, locals);
        self.queue.push_back(id);
    }

    // ---- execution ----

    fn current_entry(&self, pos: usize) -> Option<&'a Entry> {
        let scenario = self.scenario;
        self.state.fibers[pos]
            .frames
            .last()
            .and_then(|fr| scenario.entry(fr.list, fr.index))
    }

    fn run_queue(&mut self) {
        while let Some(id) = self.queue.pop_front() {
            if self.state.finished.is_some() {
                break;
            }
            if let Err(e) = self.run_fiber(id) {
                self.fail(e);
                break;
            }
        }
    }

    fn run_fiber(&mut self, id: u32) -> Result<(), String> {
        let scenario = self.scenario;
        loop {
            let Some(pos) = self.state.fibers.iter().position(|f| f.id == id) else {
                return Ok(());
            };
            if self.state.fibers[pos].waiting.is_some() {
                return Ok(());
            }
            let Some(frame) = self.state.fibers[pos].frames.last().cloned() else {
                self.fiber_ended(pos);
                return Ok(());
            };
            let Some(entry) = scenario.entry(frame.list, frame.index) else {
                self.state.fibers[pos].frames.pop();
                continue;
            };
            match frame.phase {
                Phase::Start => {
                    self.steps += 1;
                    self.state.steps_total += 1;
                    if self.steps > self.limits.max_steps {
                        return Err(format!(
                            "more than {} entries ran without waiting for anything (a goto loop?)",
                            self.limits.max_steps
                        ));
                    }
                    if let Some(cond) = &entry.condition {
                        let bindings = self.bindings(id, cond);
                        let truthy = self
                            .session()
                            .eval_bool(cond, bindings)
                            .map_err(|e| self.js_error(e, entry, "if"))?;
                        if !truthy {
                            self.set_frame(pos, frame.index + 1, Phase::Start);
                            continue;
                        }
                    }
                    self.set_frame(pos, frame.index, Phase::Then);
                    if let Some(action) = &entry.action {
                        match self.action(id, entry, action)? {
                            ActionDone::Value(value) => {
                                if let Some(name) = &action.result {
                                    self.set_variable(name, value);
                                }
                            }
                            ActionDone::Waiting => return Ok(()),
                            ActionDone::EndFiber => {
                                if let Some(f) = self.state.fibers.iter_mut().find(|f| f.id == id) {
                                    f.frames.clear();
                                }
                            }
                        }
                    }
                }
                Phase::Then => {
                    self.set_frame(pos, frame.index, Phase::Goto);
                    if let Some(then) = entry.then {
                        self.state.fibers[pos].frames.push(Frame {
                            list: then,
                            index: 0,
                            phase: Phase::Start,
                        });
                    }
                }
                Phase::Goto => match &entry.goto {
                    Some(branch) => {
                        let list = *scenario
                            .branches
                            .get(branch)
                            .ok_or_else(|| format!("goto names the missing branch `{branch}`"))?;
                        let frames = &mut self.state.fibers[pos].frames;
                        frames.clear();
                        frames.push(Frame {
                            list,
                            index: 0,
                            phase: Phase::Start,
                        });
                    }
                    None => self.set_frame(pos, frame.index + 1, Phase::Start),
                },
            }
        }
    }

    fn set_frame(&mut self, pos: usize, index: usize, phase: Phase) {
        if let Some(frame) = self.state.fibers[pos].frames.last_mut() {
            frame.index = index;
            frame.phase = phase;
        }
    }

    /// A fiber ran out of entries: hang up its call if it still owns one, else it is gone.
    fn fiber_ended(&mut self, pos: usize) {
        let fiber = &self.state.fibers[pos];
        if fiber.owns_call && !self.state.call_ended {
            let id = fiber.id;
            self.issue(id, CommandKind::Hangup, Waiting::ImplicitHangup);
        } else {
            self.state.fibers.remove(pos);
        }
    }

    fn action(
        &mut self,
        fiber: u32,
        entry: &Entry,
        action: &'a ActionCall,
    ) -> Result<ActionDone, String> {
        let spec = action.spec;
        if spec.kind.needs_call() && self.state.call_ended {
            self.note(
                "debug",
                format!(
                    "{} skipped at line {}: the call has ended; the branch stops",
                    spec.id(),
                    entry.line
                ),
            );
            return Ok(ActionDone::EndFiber);
        }
        match spec.kind {
            Kind::Javascript => {
                let code = action.code.as_deref().unwrap_or_default();
                let bindings = self.bindings(fiber, code);
                let value = self
                    .session()
                    .run_code(code, bindings)
                    .map_err(|e| self.js_error(e, entry, "javascript@v1"))?;
                self.drain_console()?;
                Ok(ActionDone::Value(value))
            }
            Kind::Log => {
                let params = self.params(fiber, entry, action)?;
                let message = params
                    .get("message")
                    .and_then(commands::text)
                    .unwrap_or_default();
                self.note("info", message);
                Ok(ActionDone::Value(Value::Null))
            }
            kind => {
                let params = self.params(fiber, entry, action)?;
                let command = commands::build(kind, &params, self.scenario.language.as_deref())
                    .map_err(|e| {
                        format!(
                            "{} at line {}, column {}: {e}",
                            spec.id(),
                            entry.line,
                            entry.column
                        )
                    })?;
                let answer_on_branch = match &command {
                    CommandKind::Dial {
                        answer_on_branch: Some(b),
                        ..
                    } => {
                        if !self.scenario.has_branch(b) {
                            return Err(format!(
                                "{} at line {}, column {}: answerOnBranch names the missing branch `{b}`",
                                spec.id(),
                                entry.line,
                                entry.column
                            ));
                        }
                        Some(b.clone())
                    }
                    _ => None,
                };
                for (name, list) in &action.events {
                    let binds = spec
                        .events
                        .iter()
                        .find(|e| e.name == name)
                        .map_or("event", |e| e.binds);
                    self.state.handlers.push(Handler {
                        fiber,
                        name: name.clone(),
                        list: *list,
                        binds: binds.to_string(),
                    });
                }
                self.issue(
                    fiber,
                    command,
                    Waiting::Action {
                        hangup: kind == Kind::Hangup,
                        answer_on_branch,
                        answered: false,
                    },
                );
                Ok(ActionDone::Waiting)
            }
        }
    }

    fn params(
        &mut self,
        fiber: u32,
        entry: &Entry,
        action: &ActionCall,
    ) -> Result<Map<String, Value>, String> {
        let value = self.eval_template(fiber, &action.params, entry, &action.spec.id())?;
        match value {
            Value::Object(map) => Ok(map),
            _ => Ok(Map::new()),
        }
    }

    fn eval_template(
        &mut self,
        fiber: u32,
        t: &Template,
        entry: &Entry,
        what: &str,
    ) -> Result<Value, String> {
        Ok(match t {
            Template::Literal(v) => v.clone(),
            Template::Expr(e) => {
                let bindings = self.bindings(fiber, e);
                let v = self.session().eval_json(e, bindings);
                v.map_err(|err| self.js_error(err, entry, what))?
            }
            Template::Interp(parts) => {
                let mut out = String::new();
                for part in parts {
                    match part {
                        Part::Text(t) => out.push_str(t),
                        Part::Expr(e) => {
                            let bindings = self.bindings(fiber, e);
                            let s = self.session().eval_string(e, bindings);
                            out.push_str(&s.map_err(|err| self.js_error(err, entry, what))?);
                        }
                    }
                }
                Value::String(out)
            }
            Template::Seq(items) => {
                let mut out = Vec::with_capacity(items.len());
                for it in items {
                    out.push(self.eval_template(fiber, it, entry, what)?);
                }
                Value::Array(out)
            }
            Template::Map(pairs) => {
                let mut out = Map::new();
                for (k, v) in pairs {
                    out.insert(k.clone(), self.eval_template(fiber, v, entry, what)?);
                }
                Value::Object(out)
            }
        })
    }

    // ---- JavaScript ----

    /// The batch's sandbox session, begun on first use.
    fn session(&mut self) -> &mut Session {
        let (limits, fingerprint, now) = (self.limits, &self.scenario.fingerprint, &self.now);
        self.session
            .get_or_insert_with(|| Session::begin(limits, fingerprint, now))
    }

    /// The values a script needs that are not yet in the batch's scope (or may have changed:
    /// a fiber's locals when another fiber evaluated last).
    fn bindings(&mut self, fiber: u32, source: &str) -> Bindings {
        if self.locals_of != Some(fiber) {
            for name in LOCALS {
                self.bound.remove(name);
            }
            self.locals_of = Some(fiber);
        }
        let Some(names) = self.scenario.script_names.get(source) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for name in names {
            if self.bound.contains(name) {
                continue;
            }
            let text = match name.as_str() {
                n if n.starts_with('$') => self.state.variables.get(n).map(Value::to_string),
                "now" => None,
                "run" => Some(self.state.run.to_string()),
                "scenario" | "app" => Some(self.state.scenario.to_string()),
                "integrations" => Some(r#"{"defaults":{}}"#.to_string()),
                "call" => self.state.call.as_ref().map(Value::to_string),
                "sms" => self.state.sms.as_ref().map(Value::to_string),
                local => self
                    .state
                    .fibers
                    .iter()
                    .find(|f| f.id == fiber)
                    .and_then(|f| f.locals.get(local))
                    .map(Value::to_string),
            };
            self.bound.insert(name.clone());
            out.push((name.clone(), text));
        }
        out
    }

    fn set_variable(&mut self, name: &str, value: Value) {
        // bound again from the run's state the next time a script uses it
        self.bound.remove(name);
        self.state.variables.insert(name.to_string(), value);
    }

    fn drain_console(&mut self) -> Result<(), String> {
        if let Some(session) = self.session.as_mut() {
            let lines = session.take_logs().map_err(|e| format!("console: {e:?}"))?;
            for (level, message) in lines {
                self.note(&level, message);
            }
        }
        Ok(())
    }

    fn limit_error(&self, e: JsError, what: &str) -> String {
        match e {
            JsError::Cpu => format!(
                "JavaScript exceeded the CPU time limit of {} ms",
                self.limits.cpu_time.as_millis()
            ),
            JsError::Memory => format!(
                "JavaScript exceeded the memory limit of {} bytes",
                self.limits.memory_bytes
            ),
            JsError::Script(m) => format!("{what}: {m}"),
        }
    }

    fn js_error(&self, e: JsError, entry: &Entry, what: &str) -> String {
        self.limit_error(
            e,
            &format!("{what} at line {}, column {}", entry.line, entry.column),
        )
    }

    // ---- end of the step ----

    fn finish(mut self) -> Step {
        if let Some(mut session) = self.session.take() {
            if self.state.finished.is_none()
                || matches!(
                    self.state.finished,
                    Some(Outcome::Stopped) | Some(Outcome::Completed)
                )
            {
                let names: Vec<String> = self
                    .bound
                    .iter()
                    .filter(|n| n.starts_with('$'))
                    .cloned()
                    .collect();
                match session.end(names) {
                    Ok(changes) => {
                        for name in changes.unset {
                            self.state.variables.remove(&name);
                        }
                        self.state.variables.extend(changes.set);
                        for (level, message) in changes.logs {
                            self.note(&level, message);
                        }
                    }
                    Err(e) => {
                        let msg = self
                            .limit_error(e, "reading variables back (they must be JSON values)");
                        self.fail(msg);
                    }
                }
            }
            session.finish();
        }
        let outcome = match &self.state.finished {
            Some(o) => o.clone(),
            None if !self.state.fibers.is_empty() || !self.state.handlers.is_empty() => {
                Outcome::Waiting
            }
            None => {
                self.state.finished = Some(Outcome::Completed);
                Outcome::Completed
            }
        };
        Step {
            state: self.state,
            commands: self.commands,
            outcome,
            log: self.log,
        }
    }
}
