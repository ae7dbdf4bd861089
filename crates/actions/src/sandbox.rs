//! The JavaScript sandbox: one QuickJS runtime and context per thread, reused between
//! evaluation batches, with a CPU-time and a memory limit.
//!
//! Creating a QuickJS context costs far more than running a scenario step, so each thread
//! keeps one context. Isolation between batches (and so between runs and accounts) comes from:
//! - a lockdown on creation: every built-in object reachable from the global object is frozen
//!   and every built-in global is made read-only, so no run can change what another one sees;
//! - user code runs through an indirect `eval`, so its `var`, `let` and function declarations
//!   stay deletable or scoped to the evaluation;
//! - after each batch every global that was not there after the lockdown is deleted; if that
//!   fails (a global made non-configurable, an extension lock, pending promise jobs) or a limit
//!   was hit, the context is thrown away and the next batch gets a new one. The context is also
//!   renewed every [`RENEW_AFTER`] batches.
//!
//! There is no I/O in the sandbox: the QuickJS `std`/`os` modules are not compiled in, no
//! module loader is installed, and no host function is exposed besides the logging `console`.

use std::cell::{Cell, RefCell};
use std::time::Instant;

use rquickjs::{
    CatchResultExt, CaughtError, Coerced, Context, Ctx, Function, Persistent, Runtime, Value, qjs,
};

use crate::protocol::Limits;

/// Batches served by one context before it is renewed.
pub(crate) const RENEW_AFTER: u32 = 10_000;

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
  const parse = JSON.parse, stringify = JSON.stringify, keys = Object.keys;
  const ownKeys = Reflect.ownKeys, getDesc = Object.getOwnPropertyDescriptor;
  const define = Object.defineProperty, freezeObj = Object.freeze, protoOf = Object.getPrototypeOf;
  const isExtensible = Object.isExtensible;
  const DateCtor = Date, StringCtor = String, ArrayFrom = Array.prototype.map;
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
  const baseline = new Set(ownKeys(G));
  let logs = [];
  const show = (x) => typeof x === 'string' ? x : (() => { try { const s = stringify(x); return s === undefined ? StringCtor(x) : s; } catch (e) { return StringCtor(x); } })();
  const logger = (level) => (...args) => { logs.push([level, ArrayFrom.call(args, show).join(' ')]); };
  return {
    eval: (src) => indirectEval(src),
    setup: (json) => {
      const d = parse(json);
      for (const k of keys(d.globals)) G[k] = d.globals[k];
      for (const k of d.declared) if (!(k in G)) G[k] = undefined;
      G.now = new DateCtor(d.now);
      G.console = { log: logger('info'), info: logger('info'), debug: logger('debug'), warn: logger('warn'), error: logger('error') };
      logs = [];
    },
    assign: (name, json) => { if (json === undefined) { delete G[name]; } else { G[name] = parse(json); } },
    collect: () => {
      const out = {};
      for (const k of keys(G)) if (k[0] === '$' && G[k] !== undefined) out[k] = G[k];
      return stringify(out);
    },
    logs: () => { const l = logs; logs = []; return stringify(l); },
    cleanup: () => {
      for (const k of ownKeys(G)) if (!baseline.has(k)) delete G[k];
      logs = [];
      return isExtensible(G) && ownKeys(G).length === baseline.size;
    },
  };
})()"#;

// Field order is drop order: the saved functions must go before the context and runtime.
struct Sandbox {
    eval: Persistent<Function<'static>>,
    setup: Persistent<Function<'static>>,
    assign: Persistent<Function<'static>>,
    collect: Persistent<Function<'static>>,
    logs: Persistent<Function<'static>>,
    cleanup: Persistent<Function<'static>>,
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
            Ok((
                get("eval")?,
                get("setup")?,
                get("assign")?,
                get("collect")?,
                get("logs")?,
                get("cleanup")?,
            ))
        })?;
        runtime.run_gc();
        let baseline_memory = usize::try_from(runtime.memory_usage().malloc_size).unwrap_or(0);
        runtime.set_memory_limit(baseline_memory.saturating_add(Limits::default().memory_bytes));
        let (eval, setup, assign, collect, logs, cleanup) = helpers;
        Ok(Sandbox {
            runtime,
            context,
            baseline_memory,
            uses: 0,
            eval,
            setup,
            assign,
            collect,
            logs,
            cleanup,
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

/// One evaluation batch: everything a `start` or `resume` call evaluates.
///
/// The batch's deadline starts when the session is created; [`Session::finish`] must be called
/// at its end to clean the sandbox for the next batch.
pub(crate) struct Session {
    limits_memory: usize,
    used: bool,
    poisoned: bool,
}

impl Session {
    /// Starts a batch with the given limits.
    pub fn begin(limits: &Limits) -> Session {
        DEADLINE.with(|d| d.set(Some(Instant::now() + limits.cpu_time)));
        TRIPPED.with(|t| t.set(false));
        Session {
            limits_memory: limits.memory_bytes,
            used: false,
            poisoned: false,
        }
    }

    fn call<R>(
        &mut self,
        pick: impl FnOnce(&Sandbox) -> &Persistent<Function<'static>>,
        run: impl for<'js> FnOnce(&Ctx<'js>, Function<'js>) -> rquickjs::Result<R>,
    ) -> Result<R, JsError> {
        let limit = self.limits_memory;
        let first = !self.used;
        self.used = true;
        let outcome = with_sandbox(|sb| {
            if first {
                sb.runtime
                    .set_memory_limit(sb.baseline_memory.saturating_add(limit));
            }
            let f = pick(sb).clone();
            sb.context.with(|ctx| {
                let f = f
                    .restore(&ctx)
                    .map_err(|e| JsError::Script(e.to_string()))?;
                run(&ctx, f).catch(&ctx).map_err(|e| classify(&e))
            })
        });
        let result = match outcome {
            Ok(r) => r,
            Err(e) => Err(e),
        };
        if matches!(result, Err(JsError::Cpu) | Err(JsError::Memory)) {
            self.poisoned = true;
        }
        result
    }

    /// Defines the predefined values and variables (`json`: `{globals, declared, now}`).
    pub fn setup(&mut self, json: &str) -> Result<(), JsError> {
        let json = json.to_string();
        self.call(|sb| &sb.setup, move |_, f| f.call::<_, ()>((json,)))
    }

    /// The value of an expression, as JSON (`undefined` and functions read as null).
    pub fn eval_json(&mut self, expr: &str) -> Result<serde_json::Value, JsError> {
        let src = wrap_expression(expr);
        let text = self.call(
            |sb| &sb.eval,
            move |ctx, f| {
                let v: Value = f.call((src,))?;
                let s = ctx.json_stringify(v)?;
                Ok(s.map(|s| s.to_string()).transpose()?)
            },
        )?;
        to_json(text)
    }

    /// The value of an expression converted to a string the way a template literal does.
    pub fn eval_string(&mut self, expr: &str) -> Result<String, JsError> {
        let src = wrap_expression(expr);
        self.call(
            |sb| &sb.eval,
            move |_, f| {
                let v: Coerced<String> = f.call((src,))?;
                Ok(v.0)
            },
        )
    }

    /// The truthiness of an expression.
    pub fn eval_bool(&mut self, expr: &str) -> Result<bool, JsError> {
        let src = wrap_expression(expr);
        self.call(
            |sb| &sb.eval,
            move |_, f| {
                let v: Coerced<bool> = f.call((src,))?;
                Ok(v.0)
            },
        )
    }

    /// Runs a script (javascript@v1); its completion value as JSON.
    pub fn run_code(&mut self, code: &str) -> Result<serde_json::Value, JsError> {
        let src = code.to_string();
        let text = self.call(
            |sb| &sb.eval,
            move |ctx, f| {
                let v: Value = f.call((src,))?;
                let s = ctx.json_stringify(v)?;
                Ok(s.map(|s| s.to_string()).transpose()?)
            },
        )?;
        to_json(text)
    }

    /// Sets (or with `None` deletes) a global.
    pub fn assign(&mut self, name: &str, value: Option<&serde_json::Value>) -> Result<(), JsError> {
        let name = name.to_string();
        let json = value.map(|v| v.to_string());
        self.call(|sb| &sb.assign, move |_, f| f.call::<_, ()>((name, json)))
    }

    /// The current `$` variables.
    pub fn collect(&mut self) -> Result<serde_json::Map<String, serde_json::Value>, JsError> {
        let text: String = self.call(|sb| &sb.collect, |_, f| f.call(()))?;
        serde_json::from_str(&text).map_err(|e| JsError::Script(format!("variables: {e}")))
    }

    /// Lines written with `console.*` since the last call: (level, message).
    pub fn take_logs(&mut self) -> Result<Vec<(String, String)>, JsError> {
        let text: String = self.call(|sb| &sb.logs, |_, f| f.call(()))?;
        serde_json::from_str(&text).map_err(|e| JsError::Script(format!("logs: {e}")))
    }

    /// Ends the batch: cleans the globals, or throws the context away when it cannot be trusted.
    pub fn finish(mut self) {
        if self.used && !self.poisoned {
            let clean = self.call(|sb| &sb.cleanup, |_, f| f.call::<_, bool>(()));
            let jobs_pending = with_sandbox(|sb| sb.runtime.is_job_pending()).unwrap_or(true);
            let renew = with_sandbox(|sb| {
                sb.uses += 1;
                sb.uses >= RENEW_AFTER
            })
            .unwrap_or(true);
            if clean != Ok(true) || jobs_pending || renew {
                self.poisoned = true;
            }
        }
        DEADLINE.with(|d| d.set(None));
        if self.poisoned {
            drop_sandbox();
        }
    }
}

fn wrap_expression(expr: &str) -> String {
    format!("(\n{expr}\n)")
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
