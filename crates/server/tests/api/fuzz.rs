//! Fuzz target of the JSON-RPC dispatcher, through HTTP on a real server: any method of the
//! interface with any positional parameters gets HTTP 200 and a JSON-RPC answer, never an
//! internal error, never a panic. `cargo bolero test` (cargo-bolero) runs it for longer.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bolero::{TypeGenerator, check};
use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::{Backend, TestApp, send};

const METHODS: &[&str] = &[
    "system.get_timestamp",
    "sms.send",
    "sms.get",
    "sms.get_list",
    "billing.get_prepaid_credit",
    "webhooks.subscribe",
    "webhooks.unsubscribe",
    "webhooks.get_list",
    "webhooks.get_event_types",
    "did.search",
    "did/areacode.countries",
    "did/areacode.types",
    "did/areacode.get_list",
    "did/store.reserve",
    "did/store.view_order",
    "did/store.buy_order",
    "did/store.cancel_order",
    "did/store.cancel_subscription",
    "media/library.create",
    "media/library.get",
    "media/library.get_list",
    "media/library.set_name",
    "media/library.set_content",
    "media/library.delete",
    "media/library.get_phone_id",
    "media/library.search",
    "apps.create",
    "apps.edit",
    "apps.delete",
    "apps.get",
    "apps.get_list",
    "apps.assign_did",
    "apps.remove_did",
    "actions.start",
    "jobs.get",
    "jobs.cancel",
    "no.such_method",
];

const TEXTS: &[&str] = &[
    "",
    "+447700900123",
    "+33612345678",
    "ACTIONS10",
    "GB",
    "MOBILE",
    "CLASSIC",
    "RANDOM",
    "sms.mo",
    "http://127.0.0.1:9/hook",
    "YAML",
    "hello",
    "IN",
    "OUT",
    "2025-06-01 00:00:00",
    "ABCDEFGH",
    "aGVsbG8=",
    "branches: {}",
    "0000-00-00 00:00:00",
    "SHA256",
];

/// One positional parameter.
#[derive(Debug, TypeGenerator)]
enum Param {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Known(u8),
    Text(String),
    List(Vec<u8>),
    Object(Vec<(u8, u8)>),
}

impl Param {
    fn json(&self) -> Value {
        let known = |i: &u8| json!(TEXTS[usize::from(*i) % TEXTS.len()]);
        match self {
            Self::Null => Value::Null,
            Self::Bool(b) => json!(b),
            Self::Int(n) => json!(n),
            Self::Float(f) => json!(f),
            Self::Known(i) => known(i),
            Self::Text(t) => json!(t),
            Self::List(items) => Value::Array(items.iter().map(known).collect()),
            Self::Object(pairs) => Value::Object(
                pairs
                    .iter()
                    .map(|(k, v)| (TEXTS[usize::from(*k) % TEXTS.len()].to_owned(), known(v)))
                    .collect(),
            ),
        }
    }
}

#[test]
fn the_json_rpc_dispatcher_answers_anything_without_internal_errors() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let app = rt.block_on(TestApp::spawn(Backend::Sqlite)).expect("app");
    let acct = rt.block_on(app.account());
    static RUNS: AtomicUsize = AtomicUsize::new(0);
    // The server lives outside the checked closure; a failing input panics in the closure only.
    let ctx = std::panic::AssertUnwindSafe((&rt, &app, &acct));
    check!()
        .with_test_time(Duration::from_secs(5))
        .with_type::<(u8, Vec<Param>)>()
        .for_each(|(method, params)| {
            let (rt, app, acct) = *ctx;
            RUNS.fetch_add(1, Ordering::Relaxed);
            let method = METHODS[usize::from(*method) % METHODS.len()];
            let params: Vec<Value> = params.iter().map(Param::json).collect();
            let body = json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params});
            let (status, answer) = rt.block_on(send(
                app.anon(Method::POST, "/json-rpc/v1.1/")
                    .header("authorization", format!("Api-Key {}", acct.api_key))
                    .json(&body),
            ));
            assert_eq!(status, 200, "{body} -> {answer}");
            assert_eq!(answer["jsonrpc"], "2.0", "{body} -> {answer}");
            assert_eq!(answer["id"], 7, "{body} -> {answer}");
            assert!(
                answer.get("result").is_some() != answer.get("error").is_some(),
                "{body} -> {answer}"
            );
            assert_ne!(
                answer["error"]["code"], -32603,
                "internal error: {body} -> {answer}"
            );
        });
    eprintln!(
        "JSON-RPC dispatcher: {} requests, no internal error",
        RUNS.load(Ordering::Relaxed)
    );
}
