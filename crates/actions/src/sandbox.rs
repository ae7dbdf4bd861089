//! The JavaScript sandbox: one QuickJS runtime and context per thread, reused between
//! evaluation batches, with a CPU-time and a memory limit.
//!
//! Creating a QuickJS context costs far more than running a scenario step, so each thread
//! keeps one context. Isolation between batches (and so between runs and accounts) comes from:
//! - a lockdown on creation: every built-in object reachable from the global object is frozen
//!   and every built-in global is made read-only, so no batch can change what another sees;
//! - the run's values live on a fresh scope object per batch (`with (scope)`), never on the
//!   global object: variables, `now`, `run`, `call`, `console`... are gone with the scope;
//!   `javascript@v1` code runs through a direct `eval` inside a function, so its declarations
//!   stay local to the evaluation; code that is one expression (the usual `$x = ...`) is
//!   compiled once instead, as `if` and `${{ }}` expressions are, and kept;
//! - after each batch any global created by sloppy code is deleted; if that fails (a global
//!   made non-configurable, an extension lock), promise jobs are left pending, or a limit was
//!   hit, the context is thrown away and the next batch gets a new one. The context is also
//!   renewed every [`RENEW_AFTER`] batches.
//!
//! There is no I/O in the sandbox: the QuickJS `std`/`os` modules are not compiled in, no
//! module loader is installed, and no host function is exposed besides the logging `console`.

use std::cell::{Cell, RefCell};
use std::collections::{HashMap, HashSet};
use std::time::Instant;

use rquickjs::{
    CatchResultExt, CaughtError, Coerced, Context, Ctx, FromJs, Function, Persistent, Runtime,
    Value, qjs,
};

use crate::protocol::Limits;

/// Batches served by one context before it is renewed.
pub(crate) const RENEW_AFTER: u32 = 10_000;

/// Compiled expressions kept per thread before the cache is emptied.
const MAX_CACHED_EXPRESSIONS: usize = 512;

/// Longest `javascript@v1` code (bytes) tried as one expression: what the fast path keeps
/// per thread stays within [`MAX_CACHED_EXPRESSIONS`] entries of this size, whatever the
/// scenarios hold. Longer code runs through `eval`.
const MAX_LONE_EXPRESSION: usize = 1024;

/// Memory allowed to the context beyond its size after creation, besides a batch's own limit:
/// room for the cache of compiled expressions.
const CACHE_ALLOWANCE: usize = 2 * 1024 * 1024;

/// Allocation growth between two cycle collections (QuickJS's default is 256 KiB; the frozen
/// built-ins make each collection cost the same whatever a batch allocated).
const GC_THRESHOLD: usize = 2 * 1024 * 1024;

/// Native stack allowed to JavaScript recursion.
const MAX_STACK: usize = 512 * 1024;

thread_local! {
    static DEADLINE: Cell<Option<Instant>> = const { Cell::new(None) };
    static TRIPPED: Cell<bool> = const { Cell::new(false) };
    static SANDBOX: RefCell<Option<Sandbox>> = const { RefCell::new(None) };
}

/// Why an evaluation failed.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum JsError {
    /// The batch ran past its CPU-time limit.
    Cpu,
    /// The sandbox ran out of its memory limit.
    Memory,
    /// The script threw or did not compile.
    Script(String),
}

const PRELUDE: &str = r#"(() => {
  'use strict';
  const G = globalThis;
  const indirectEval = G.eval;
  const parse = JSON.parse, stringify = JSON.stringify;
  const ownKeys = Reflect.ownKeys, getDesc = Object.getOwnPropertyDescriptor;
  const define = Object.defineProperty, freezeObj = Object.freeze, protoOf = Object.getPrototypeOf;
  const isExtensible = Object.isExtensible, create = Object.create;
  const DateCtor = Date, StringCtor = String, SetCtor = Set, map = Array.prototype.map;
  const seen = new Set();
  const freeze = (o) => {
    if (o === null || (typeof o !== 'object' && typeof o !== 'function') || o === G || seen.has(o)) return;
    seen.add(o);
    freezeObj(o);
    for (const k of ownKeys(o)) {
      const d = getDesc(o, k);
      if (!d) continue;
      if ('value' in d) freeze(d.value); else { freeze(d.get); freeze(d.set); }
    }
    freeze(protoOf(o));
  };
  for (const k of ownKeys(G)) {
    const d = getDesc(G, k);
    if ('value' in d) {
      freeze(d.value);
      define(G, k, { writable: false, configurable: false });
    } else {
      freeze(d.get); freeze(d.set);
      define(G, k, { configurable: false });
    }
  }
  freeze(protoOf(G));
  // Functions reachable from user code (through `arguments.callee`) are frozen with their
  // prototype objects, so nothing can be left on them for a later batch.
  const sealFn = (f) => { if (f.prototype) freezeObj(f.prototype); return freezeObj(f); };
  const runCode = sealFn(indirectEval('(function (__scope, __code) { with (__scope) { return eval(__code); } })'));
  // The batch: its scope object (the run's values live there, never on the global object),
  // the time of `now`, and console lines.
  let batch = null;
  const show = (x) => typeof x === 'string' ? x : (() => { try { const s = stringify(x); return s === undefined ? StringCtor(x) : s; } catch (e) { return StringCtor(x); } })();
  const logger = (level) => (...args) => { if (batch) batch.logs.push([level, map.call(args, show).join(' ')]); };
  const consoleObj = freezeObj({ log: sealFn(logger('info')), info: sealFn(logger('info')), debug: sealFn(logger('debug')), warn: sealFn(logger('warn')), error: sealFn(logger('error')) });
  // No run can add a global: sloppy assignments to undeclared names do nothing.
  Object.preventExtensions(G);
  // Binds the names an expression uses (JSON text, or undefined) before it runs.
  const bind = (names, texts) => {
    const scope = batch.scope;
    for (let i = 0; i < names.length; i++) {
      const name = names[i], text = texts[i];
      scope[name] = name === 'now' ? new DateCtor(batch.now) : (text === undefined ? undefined : parse(text));
    }
    return scope;
  };
  return {
    compile: (src) => sealFn(indirectEval('(function (__scope) { with (__scope) { return (\n' + src + '\n); } })')),
    setup: (nowText) => {
      const scope = create(null);
      scope.console = consoleObj;
      batch = { scope, now: nowText, logs: [] };
    },
    run: (fn, names, texts) => fn(bind(names, texts)),
    code: (code, names, texts) => runCode(bind(names, texts), code),
    end: (names) => {
      if (!batch) return '{"set":{},"unset":[],"logs":[]}';
      const set = {}, unset = [], scope = batch.scope;
      for (const k of names) {
        const v = scope[k];
        if (v === undefined) unset.push(k); else set[k] = v;
      }
      const logs = batch.logs;
      batch = null;
      return stringify({ set, unset, logs });
    },
    logs: () => { if (!batch) return '[]'; const l = batch.logs; batch.logs = []; return stringify(l); },
    reset: () => { batch = null; return isExtensible(G) === false; },
  };
})()"#;

// Field order is drop order: the saved functions must go before the context and runtime.
struct Sandbox {
    /// Compiled expressions by scenario fingerprint and source.
    expressions: HashMap<String, Persistent<Function<'static>>>,
    /// `javascript@v1` code (same keys) known not to be a lone expression: it runs through
    /// a direct `eval` at every evaluation.
    scripts: HashSet<String>,
    compile: Persistent<Function<'static>>,
    setup: Persistent<Function<'static>>,
    run: Persistent<Function<'static>>,
    code: Persistent<Function<'static>>,
    end: Persistent<Function<'static>>,
    logs: Persistent<Function<'static>>,
    reset: Persistent<Function<'static>>,
    context: Context,
    runtime: Runtime,
    baseline_memory: usize,
    uses: u32,
}

impl Sandbox {
    fn create() -> Result<Sandbox, JsError> {
        let runtime = Runtime::new().map_err(|e| JsError::Script(e.to_string()))?;
        runtime.set_max_stack_size(MAX_STACK);
        runtime.set_interrupt_handler(Some(Box::new(|| {
            let over = DEADLINE
                .with(|d| d.get())
                .is_some_and(|d| Instant::now() >= d);
            if over {
                TRIPPED.with(|t| t.set(true));
            }
            over
        })));
        let context = Context::full(&runtime).map_err(|e| JsError::Script(e.to_string()))?;
        let helpers = context.with(|ctx| -> Result<_, JsError> {
            let obj: rquickjs::Object = ctx
                .eval(PRELUDE)
                .catch(&ctx)
                .map_err(|e| JsError::Script(format!("sandbox prelude: {e}")))?;
            let get = |name: &str| -> Result<Persistent<Function<'static>>, JsError> {
                let f: Function = obj
                    .get(name)
                    .map_err(|e| JsError::Script(format!("sandbox prelude: {e}")))?;
                Ok(Persistent::save(&ctx, f))
            };
            Ok([
                get("compile")?,
                get("setup")?,
                get("run")?,
                get("code")?,
                get("end")?,
                get("logs")?,
                get("reset")?,
            ])
        })?;
        runtime.run_gc();
        runtime.set_gc_threshold(GC_THRESHOLD);
        let baseline_memory = usize::try_from(runtime.memory_usage().malloc_size).unwrap_or(0);
        runtime.set_memory_limit(baseline_memory.saturating_add(Limits::default().memory_bytes));
        let [compile, setup, run, code, end, logs, reset] = helpers;
        Ok(Sandbox {
            expressions: HashMap::new(),
            scripts: HashSet::new(),
            compile,
            setup,
            run,
            code,
            end,
            logs,
            reset,
            context,
            runtime,
            baseline_memory,
            uses: 0,
        })
    }
}

/// Runs `f` with this thread's sandbox; the sandbox is created on first use.
fn with_sandbox<R>(f: impl FnOnce(&mut Sandbox) -> R) -> Result<R, JsError> {
    SANDBOX.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.is_none() {
            *slot = Some(Sandbox::create()?);
        }
        match slot.as_mut() {
            Some(sandbox) => Ok(f(sandbox)),
            None => Err(JsError::Script("sandbox unavailable".into())),
        }
    })
}

fn drop_sandbox() {
    SANDBOX.with(|cell| {
        if let Ok(mut slot) = cell.try_borrow_mut() {
            *slot = None;
        }
    });
}

/// Checks that `source` compiles as a script, without running it.
pub(crate) fn compile_check(source: &str) -> Result<(), String> {
    let result = with_sandbox(|sb| {
        sb.context.with(|ctx| {
            let c_source = std::ffi::CString::new(source)
                .map_err(|_| "the code contains a NUL character".to_string())?;
            // SAFETY: `ctx` is a live context of this thread; JS_Eval with COMPILE_ONLY only
            // parses and returns a new reference (a compiled function or the exception marker)
            // whose ownership `Value::from_raw` takes, so it is freed on drop.
            let value = unsafe {
                let raw = qjs::JS_Eval(
                    ctx.as_raw().as_ptr(),
                    c_source.as_ptr(),
                    source.len() as _,
                    c"<expression>".as_ptr(),
                    (qjs::JS_EVAL_TYPE_GLOBAL | qjs::JS_EVAL_FLAG_COMPILE_ONLY) as i32,
                );
                Value::from_raw(ctx.clone(), raw)
            };
            if value.is_exception() {
                let caught = ctx.catch();
                let message = caught
                    .as_exception()
                    .and_then(|e| e.message())
                    .unwrap_or_else(|| "syntax error".to_string());
                return Err(message);
            }
            Ok(())
        })
    });
    match result {
        Ok(r) => r,
        Err(JsError::Script(e)) => Err(e),
        Err(other) => Err(format!("{other:?}")),
    }
}

/// What a batch changed, read back at its end.
#[derive(Debug, Default, serde::Deserialize)]
pub(crate) struct BatchChanges {
    /// Variables set to a value.
    pub set: serde_json::Map<String, serde_json::Value>,
    /// Variables deleted or set to `undefined`.
    pub unset: Vec<String>,
    /// Console lines: (level, message).
    pub logs: Vec<(String, String)>,
}

/// Values bound into the scope before an evaluation: (name, JSON text or `None` for undefined).
pub(crate) type Bindings = Vec<(String, Option<String>)>;

/// One evaluation batch: everything a `start` or `resume` call evaluates.
///
/// The batch's deadline starts when the session is created; the scope is created on first
/// use; [`Session::finish`] must be called at the end.
pub(crate) struct Session {
    fingerprint: String,
    now: String,
    limits_memory: usize,
    used: bool,
    poisoned: bool,
}

impl Session {
    /// Starts a batch with the given limits, for a scenario, at `now` (RFC 3339).
    pub(crate) fn begin(limits: &Limits, fingerprint: &str, now: &str) -> Session {
        DEADLINE.with(|d| d.set(Some(Instant::now() + limits.cpu_time)));
        TRIPPED.with(|t| t.set(false));
        Session {
            fingerprint: fingerprint.to_string(),
            now: now.to_string(),
            limits_memory: limits.memory_bytes,
            used: false,
            poisoned: false,
        }
    }

    fn call<R>(
        &mut self,
        pick: impl FnOnce(&Sandbox) -> Persistent<Function<'static>>,
        run: impl for<'js> FnOnce(&Ctx<'js>, Function<'js>) -> rquickjs::Result<R>,
    ) -> Result<R, JsError> {
        if !self.used {
            self.used = true;
            let limit = self.limits_memory;
            with_sandbox(|sb| {
                sb.runtime.set_memory_limit(
                    sb.baseline_memory
                        .saturating_add(CACHE_ALLOWANCE)
                        .saturating_add(limit),
                );
            })?;
            let now = self.now.clone();
            self.call_raw(|sb| sb.setup.clone(), move |_, f| f.call::<_, ()>((now,)))?;
        }
        self.call_raw(pick, run)
    }

    fn call_raw<R>(
        &mut self,
        pick: impl FnOnce(&Sandbox) -> Persistent<Function<'static>>,
        run: impl for<'js> FnOnce(&Ctx<'js>, Function<'js>) -> rquickjs::Result<R>,
    ) -> Result<R, JsError> {
        let outcome = with_sandbox(|sb| {
            let f = pick(sb);
            sb.context.with(|ctx| {
                let f = f
                    .restore(&ctx)
                    .map_err(|e| JsError::Script(e.to_string()))?;
                run(&ctx, f).catch(&ctx).map_err(|e| classify(&e))
            })
        });
        let result = outcome.and_then(|r| r);
        if matches!(result, Err(JsError::Cpu) | Err(JsError::Memory)) {
            self.poisoned = true;
        }
        result
    }

    /// The compiled function of an expression, from the cache or compiled now.
    fn expression(&mut self, expr: &str) -> Result<Persistent<Function<'static>>, JsError> {
        let key = format!("{}\u{0}{expr}", self.fingerprint);
        let cached = with_sandbox(|sb| sb.expressions.get(&key).cloned())?;
        if let Some(f) = cached {
            return Ok(f);
        }
        let src = expr.to_string();
        let compiled = self.call(
            |sb| sb.compile.clone(),
            move |ctx, f| {
                let g: Function = f.call((src,))?;
                Ok(Persistent::save(ctx, g))
            },
        )?;
        with_sandbox(|sb| {
            if sb.expressions.len() >= MAX_CACHED_EXPRESSIONS {
                sb.expressions.clear();
                sb.scripts.clear();
            }
            sb.expressions.insert(key, compiled.clone());
        })?;
        Ok(compiled)
    }

    fn evaluate<R: 'static>(
        &mut self,
        expr: &str,
        bindings: Bindings,
        convert: impl for<'js> FnOnce(&Ctx<'js>, Value<'js>) -> rquickjs::Result<R>,
    ) -> Result<R, JsError> {
        let compiled = self.expression(expr)?;
        self.run_compiled(compiled, bindings, convert)
    }

    /// Runs a compiled expression in the batch's scope, with `bindings` bound first.
    fn run_compiled<R: 'static>(
        &mut self,
        compiled: Persistent<Function<'static>>,
        bindings: Bindings,
        convert: impl for<'js> FnOnce(&Ctx<'js>, Value<'js>) -> rquickjs::Result<R>,
    ) -> Result<R, JsError> {
        let (names, texts): (Vec<String>, Vec<Option<String>>) = bindings.into_iter().unzip();
        self.call(
            |sb| sb.run.clone(),
            move |ctx, run| {
                let compiled = compiled.restore(ctx)?;
                let v: Value = run.call((compiled, names, texts))?;
                convert(ctx, v)
            },
        )
    }

    /// The value of an expression, as JSON (`undefined` and functions read as null).
    pub(crate) fn eval_json(
        &mut self,
        expr: &str,
        bindings: Bindings,
    ) -> Result<serde_json::Value, JsError> {
        let text = self.evaluate(expr, bindings, json_text)?;
        to_json(text)
    }

    /// The value of an expression converted to a string the way a template literal does.
    pub(crate) fn eval_string(
        &mut self,
        expr: &str,
        bindings: Bindings,
    ) -> Result<String, JsError> {
        self.evaluate(expr, bindings, |ctx, v| {
            Coerced::<String>::from_js(ctx, v).map(|c| c.0)
        })
    }

    /// The truthiness of an expression.
    pub(crate) fn eval_bool(&mut self, expr: &str, bindings: Bindings) -> Result<bool, JsError> {
        self.evaluate(expr, bindings, |ctx, v| {
            Coerced::<bool>::from_js(ctx, v).map(|c| c.0)
        })
    }

    /// Runs a script (javascript@v1); its completion value as JSON.
    ///
    /// Code that is one expression (`$user = $api.json.results[0]`, the usual form) runs
    /// as a compiled expression, kept like those of `if` and `${{ }}`: its value is the
    /// script's completion value. Any other code runs through a direct `eval`, which
    /// compiles it again at every evaluation.
    pub(crate) fn run_code(
        &mut self,
        code: &str,
        bindings: Bindings,
    ) -> Result<serde_json::Value, JsError> {
        if let Some(expr) = lone_expression(code)
            && let Some(compiled) = self.code_expression(expr)?
        {
            let text = self.run_compiled(compiled, bindings, json_text)?;
            return to_json(text);
        }
        #[cfg(test)]
        EVALS.with(|n| n.set(n.get() + 1));
        let code = code.to_string();
        let (names, texts): (Vec<String>, Vec<Option<String>>) = bindings.into_iter().unzip();
        let text = self.call(
            |sb| sb.code.clone(),
            move |ctx, f| {
                let v: Value = f.call((code, names, texts))?;
                json_text(ctx, v)
            },
        )?;
        to_json(text)
    }

    /// The compiled expression of `javascript@v1` code that [`lone_expression`] let
    /// through, or `None` when it does not compile as an expression (then it runs through
    /// `eval`; the answer is kept).
    fn code_expression(
        &mut self,
        expr: &str,
    ) -> Result<Option<Persistent<Function<'static>>>, JsError> {
        let key = format!("{}\u{0}{expr}", self.fingerprint);
        if with_sandbox(|sb| sb.scripts.contains(&key))? {
            return Ok(None);
        }
        match self.expression(expr) {
            Ok(compiled) => Ok(Some(compiled)),
            Err(JsError::Script(_)) => {
                with_sandbox(|sb| {
                    if sb.scripts.len() >= MAX_CACHED_EXPRESSIONS {
                        sb.scripts.clear();
                    }
                    sb.scripts.insert(key);
                })?;
                Ok(None)
            }
            Err(other) => Err(other),
        }
    }

    /// Ends the batch's JavaScript: the values of `names` (variables bound in this batch) and
    /// the console lines not yet taken.
    pub(crate) fn end(&mut self, names: Vec<String>) -> Result<BatchChanges, JsError> {
        if !self.used {
            return Ok(BatchChanges::default());
        }
        let text: String = self.call(|sb| sb.end.clone(), move |_, f| f.call((names,)))?;
        serde_json::from_str(&text).map_err(|e| JsError::Script(format!("variables: {e}")))
    }

    /// Lines written with `console.*` since the last call: (level, message).
    pub(crate) fn take_logs(&mut self) -> Result<Vec<(String, String)>, JsError> {
        if !self.used {
            return Ok(Vec::new());
        }
        let text: String = self.call(|sb| sb.logs.clone(), |_, f| f.call(()))?;
        serde_json::from_str(&text).map_err(|e| JsError::Script(format!("logs: {e}")))
    }

    /// Ends the batch; throws the context away when it cannot be trusted any more.
    pub(crate) fn finish(mut self) {
        if self.used && !self.poisoned {
            let sealed = self.call(|sb| sb.reset.clone(), |_, f| f.call::<_, bool>(()));
            let jobs_pending = with_sandbox(|sb| sb.runtime.is_job_pending()).unwrap_or(true);
            let renew = with_sandbox(|sb| {
                sb.uses += 1;
                sb.uses >= RENEW_AFTER
            })
            .unwrap_or(true);
            if sealed != Ok(true) || jobs_pending || renew {
                self.poisoned = true;
            }
        }
        DEADLINE.with(|d| d.set(None));
        if self.poisoned {
            drop_sandbox();
        }
    }
}

/// The expression `javascript@v1` code may run as, when its value as an expression is
/// certainly its completion value as a script (the code already compiled as a script when
/// the scenario was saved): without trailing semicolons, and `None` for code longer than
/// [`MAX_LONE_EXPRESSION`], for code whose first
/// token reads differently in the two (`{` opens a block, not an object; `function`,
/// `class` and `let` declare; `/` may open a comment hiding one of those) or that names what
/// only the `eval` wrapper has (`arguments`, `__code`). Whether it is an expression at all
/// is left to the compiler.
fn lone_expression(code: &str) -> Option<&str> {
    let expr = code.trim_end_matches(|c: char| c == ';' || c.is_whitespace());
    let start = expr.trim_start();
    let first_word: String = start
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '$')
        .collect();
    let refused = start.is_empty()
        || expr.len() > MAX_LONE_EXPRESSION
        || start.starts_with(['{', '/'])
        || matches!(first_word.as_str(), "function" | "class" | "let" | "async")
        || expr.contains("arguments")
        || expr.contains("__code");
    (!refused).then_some(expr)
}

#[cfg(test)]
thread_local! {
    /// `javascript@v1` evaluations that went through `eval` on this thread.
    static EVALS: Cell<u32> = const { Cell::new(0) };
}

/// A value as JSON text (`None` for `undefined` and functions), the conversion of
/// [`Session::eval_json`] and [`Session::run_code`].
fn json_text<'js>(ctx: &Ctx<'js>, v: Value<'js>) -> rquickjs::Result<Option<String>> {
    let s = ctx.json_stringify(v)?;
    s.map(|s| s.to_string()).transpose()
}

fn to_json(text: Option<String>) -> Result<serde_json::Value, JsError> {
    match text {
        None => Ok(serde_json::Value::Null),
        Some(t) => serde_json::from_str(&t).map_err(|e| JsError::Script(format!("value: {e}"))),
    }
}

fn classify(e: &CaughtError<'_>) -> JsError {
    if TRIPPED.with(|t| t.get()) {
        return JsError::Cpu;
    }
    let text = match e {
        CaughtError::Exception(ex) => {
            let name: Option<String> = ex.as_object().get("name").ok().flatten();
            format!(
                "{}: {}",
                name.unwrap_or_else(|| "Error".into()),
                ex.message().unwrap_or_default()
            )
        }
        CaughtError::Value(v) => {
            let shown = v
                .as_string()
                .and_then(|s| s.to_string().ok())
                .unwrap_or_else(|| format!("{:?}", v.type_of()));
            format!("uncaught {shown}")
        }
        CaughtError::Error(err) => err.to_string(),
    };
    if text.contains("out of memory")
        || matches!(e, CaughtError::Error(rquickjs::Error::Allocation))
    {
        return JsError::Memory;
    }
    JsError::Script(text)
}

#[cfg(test)]
mod tests {
    use serde_json::{Value as Json, json};

    use super::{EVALS, Session};
    use crate::protocol::Limits;

    /// Runs each code in one batch, with `$n` bound to 2 and `$x` declared: the values,
    /// `$x` at the end, and how many went through `eval`.
    fn run_all(codes: &[&str]) -> (Vec<Json>, Json, u32) {
        let before = EVALS.with(|n| n.get());
        let mut session = Session::begin(&Limits::default(), "fp", "2026-11-27T00:00:00Z");
        // As a run binds them: each name once per batch, before its first use.
        let mut bindings = vec![
            ("$n".to_string(), Some("2".to_string())),
            ("$x".to_string(), None),
        ];
        let values = codes
            .iter()
            .map(|code| {
                session
                    .run_code(code, std::mem::take(&mut bindings))
                    .expect(code)
            })
            .collect();
        let changes = session.end(vec!["$x".into()]).expect("end");
        session.finish();
        let x = changes.set.get("$x").cloned().unwrap_or(Json::Null);
        (values, x, EVALS.with(|n| n.get()) - before)
    }

    #[test]
    fn a_lone_expression_runs_compiled_and_keeps_its_meaning() {
        let (values, x, evals) =
            run_all(&["$x = $n * 2", "$x = $x + 1;", "[1, 2].map(v => v * $n) ;\n"]);
        assert_eq!(values, [json!(4), json!(5), json!([2, 4])]);
        assert_eq!(x, json!(5));
        assert_eq!(evals, 0, "a lone expression went through eval");
        // Kept: the second time costs no compilation either.
        let (_, _, evals) = run_all(&["$x = $n * 2"]);
        assert_eq!(evals, 0);
    }

    #[test]
    fn code_whose_value_as_an_expression_differs_runs_as_a_script() {
        // One expression, but longer than the fast path takes.
        let long = format!("$x = 2{}", " ".repeat(super::MAX_LONE_EXPRESSION));
        let long = format!("{long}+ 0");
        let cases: [(&str, Json); 8] = [
            ("{}", Json::Null),
            ("{ a: 1 }", json!(1)),
            ("function f() { return 1 }", Json::Null),
            ("// note\n{ b: 2 }", json!(2)),
            ("arguments.length", json!(2)),
            ("$x = 1; $x + 1", json!(2)),
            ("let y = 3; y", json!(3)),
            (&long, json!(2)),
        ];
        for (code, want) in cases {
            let (values, _, evals) = run_all(&[code]);
            assert_eq!(values, [want], "{code}");
            assert_eq!(evals, 1, "{code} did not run through eval");
        }
    }
}
