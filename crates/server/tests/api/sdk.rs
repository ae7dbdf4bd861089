//! The real service's official SDKs work unchanged, each over HTTPS the usual way, through
//! every JSON-RPC method dialtone implements (the plan in tests/sdk/plan.json), and a method
//! it does not implement answers an error each SDK surfaces:
//!
//! - Python `callr==2.1.0` (PyPI; `.ci/run` installs it), trusting the self-signed
//!   certificate through `SSL_CERT_FILE`;
//! - Node.js `callr@1.2.0` (npm; `.ci/run` runs `npm ci` in tests/sdk/node), which always
//!   connects with HTTPS on port 443: the server listens on 127.0.0.N:443, trusted through
//!   `NODE_EXTRA_CA_CERTS`;
//! - Java (THECALLR/sdk-java, on no registry this project reaches): run when
//!   `DIALTONE_JAVA_SDK` holds the class path of the SDK with gson and commons-codec,
//!   trusting the certificate through a PKCS#12 trust store made with `keytool`.

use std::path::Path;
use std::process::Stdio;

use reqwest::Method;
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;

use crate::helpers::{Backend, TestAccount, TestApp, send};
use crate::jsonrpc::rpc;
use crate::receiver::Receiver;

/// Runs `name(backend)` as `name::sqlite` and `name::postgres` (each test starts its own
/// server, with HTTPS where its SDK needs it).
macro_rules! per_backend {
    ($($name:ident),+ $(,)?) => {$(
        mod $name {
            use crate::helpers::Backend;
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() {
                super::$name(Backend::Sqlite).await;
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres() {
                super::$name(Backend::Postgres).await;
            }
        }
    )+};
}

per_backend!(
    the_official_python_sdk_works_unchanged_over_https,
    the_official_node_sdk_works_unchanged_over_https_on_443,
    the_official_java_sdk_works_unchanged_over_https,
);

/// A server on `backend` with HTTPS on `listen`, with the real service's brand (its SDKs
/// send `CALLR-Login-As`), as a deployment for them runs; None (said) without PostgreSQL.
async fn spawn_https(backend: Backend, listen: &str) -> Option<TestApp> {
    let app = TestApp::spawn_with(backend, |c| {
        c.tls = Some(https_on(listen));
        c.header_brand = "CALLR".into();
    })
    .await;
    if app.is_none() {
        crate::helpers::skip("set DIALTONE_TEST_DATABASE_URL to run this test on PostgreSQL");
    }
    app
}

const SDK_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/sdk");

/// What the SDK under test can do.
#[derive(Clone, Copy)]
struct Sdk {
    name: &'static str,
    /// It has a "login as" option.
    login_as: bool,
}

fn https_on(listen: &str) -> dialtone::config::Tls {
    dialtone::config::Tls {
        listen: listen.into(),
        identity: None,
        required: true,
    }
}

/// An account, a sub account, a stranger and what the plan refers to.
async fn prepare(app: &TestApp) -> (TestAccount, TestAccount, Value) {
    let acct = app.account().await;
    let sub = app.sub_account(&acct, "1000.00").await;
    let stranger = app.account().await;
    let receiver = Receiver::start().await;
    let areas = rpc(
        app,
        &acct,
        "did/areacode.get_list",
        json!(["GB", "GEOGRAPHIC"]),
    )
    .await;
    let area = areas["result"][0]["id"].as_i64().expect("an area code");
    let (status, task) = send(app.req(
        &acct,
        Method::POST,
        "/v2.0/calls/export?direction=inbound&from=2025-06-01T00:00:00Z&to=2025-06-02T00:00:00Z",
    ))
    .await;
    assert_eq!(status, 202, "{task}");
    let media = rpc(app, &acct, "media/library.create", json!(["by digits"])).await;
    let media = media["result"].as_i64().expect("a media id");
    use base64::Engine;
    let wav = base64::engine::general_purpose::STANDARD.encode(dialtone_media::silence_wav(500));
    let vars = json!({
        "receiver": receiver.url,
        "area": area.to_string(),
        "script": "branches:\n  api-initiated:\n    actions:\n      - action: log@v1\n        params: { message: \"hi ${{ $who }}\" }\n",
        "wav": wav,
        "task": task["taskid"],
        "media_digits": media.to_string(),
        "sub": sub.sid.to_uppercase(),
        "sub_login": sub.login,
        "stranger": stranger.sid.to_uppercase(),
    });
    (acct, sub, vars)
}

/// Runs a driver with the plan on its standard input; its standard output, as JSON.
async fn drive(mut command: tokio::process::Command, vars: &Value) -> Value {
    let plan: Value = serde_json::from_str(
        &std::fs::read_to_string(format!("{SDK_DIR}/plan.json")).expect("the plan"),
    )
    .expect("the plan is JSON");
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("start the driver");
    let input = json!({"plan": plan, "vars": vars}).to_string();
    let mut stdin = child.stdin.take().expect("stdin");
    stdin
        .write_all(input.as_bytes())
        .await
        .expect("write the plan");
    drop(stdin);
    let out = tokio::time::timeout(
        std::time::Duration::from_secs(120),
        child.wait_with_output(),
    )
    .await
    .expect("the driver ends within 2 minutes")
    .expect("the driver ran");
    assert!(
        out.status.success(),
        "the driver failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "the driver prints JSON ({e}): {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// What every SDK must have seen, step by step.
async fn check(app: &TestApp, sub: &TestAccount, sdk: Sdk, got: &Value) {
    let name = sdk.name;
    let result = |step: &str| -> Value {
        let answer = &got[step];
        assert!(
            answer.get("result").is_some(),
            "{name}: {step} answered {answer}"
        );
        answer["result"].clone()
    };
    let error_code = |step: &str| -> i64 {
        got[step]["error"]["code"]
            .as_i64()
            .unwrap_or_else(|| panic!("{name}: {step} should fail: {}", got[step]))
    };
    assert_eq!(result("timestamp"), 1_748_779_200, "{name}");
    assert!(result("credit")["amount"].is_string(), "{name}");
    assert!(
        result("event_types")
            .as_array()
            .is_some_and(|t| t.contains(&json!("sms.mo"))),
        "{name}"
    );
    assert!(result("hook")["hash"].is_string(), "{name}");
    assert_eq!(result("hooks").as_array().map(Vec::len), Some(1), "{name}");
    assert_eq!(result("unhooked"), true, "{name}");
    let hash = result("sms");
    let hash = hash.as_str().expect("an SMS hash");
    assert_eq!(hash.len(), 8);
    assert_eq!(hash, hash.to_uppercase());
    let sms = result("sms_get");
    assert_eq!(sms["hash"], hash, "{name}");
    assert_eq!(sms["type"], "OUT");
    assert_eq!(sms["text"], "Hello from the SDK");
    assert_eq!(
        sms["status"], "PENDING",
        "the simulated network took it as it was stored"
    );
    assert_eq!(sms["date_sent"], "0000-00-00 00:00:00");
    let list = result("sms_list");
    let flash = list
        .as_array()
        .and_then(|l| l.iter().find(|s| s["hash"] == result("flash")))
        .unwrap_or_else(|| panic!("{name}: the flash SMS is listed: {list}"))
        .clone();
    assert_eq!(flash["options"]["flash_message"], true);
    assert_eq!(flash["nature"], "ALERTING");
    assert_eq!(flash["user_data"], "42");
    assert_eq!(error_code("sms_missing"), 115, "{name}");
    assert!(
        result("countries")
            .as_array()
            .is_some_and(|c| c.iter().any(|c| c["code"] == "GB"))
    );
    assert!(
        result("types")
            .as_array()
            .is_some_and(|t| t.contains(&json!("GEOGRAPHIC")))
    );
    assert_eq!(
        result("reserved")["items"].as_array().map(Vec::len),
        Some(1),
        "{name}: the area code id given as a string of digits"
    );
    assert_eq!(result("order")["status"], "RESERVED");
    assert_eq!(
        result("bought")["success"].as_array().map(Vec::len),
        Some(1)
    );
    assert_eq!(result("order_cancelled"), true);
    assert_eq!(result("dids")["total"], 1);
    let app_hash = result("app")["hash"].clone();
    assert!(app_hash.is_string(), "{name}");
    assert_eq!(result("app_edited")["name"], "SDK app renamed");
    assert_eq!(result("app_got")["hash"], app_hash);
    assert_eq!(result("assigned"), true);
    assert_eq!(result("apps")[0]["did"].as_array().map(Vec::len), Some(1));
    let found = result("apps_found");
    assert_eq!(found["total"], 1, "{name}: {found}");
    assert_eq!(found["hits"][0]["hash"], app_hash);
    assert_eq!(found["has_more"], false);
    assert_eq!(result("unassigned"), true);
    assert_eq!(result("started")["status"], "running", "{name}");
    assert!(result("media").is_i64(), "{name}: a media id is an integer");
    assert_eq!(result("media_named"), true);
    assert_eq!(result("media_content"), true);
    let media = result("media_got");
    assert_eq!(media["name"], "SDK media renamed", "{name}");
    assert_eq!(media["status"], "PENDING_CONVERSION");
    for field in [
        "id",
        "hash",
        "content",
        "voice",
        "source",
        "language",
        "category",
        "tags",
        "url",
        "is_editable",
    ] {
        assert!(
            media.get(field).is_some(),
            "{name}: media has {field}: {media}"
        );
    }
    assert!(result("media_by_digits")["hash"].is_string(), "{name}");
    assert_eq!(result("medias").as_array().map(Vec::len), Some(2));
    assert_eq!(result("medias_found")["total"], 2);
    assert!(
        result("phone_id")["phone_number"]
            .as_str()
            .is_some_and(|n| n.starts_with("+44"))
    );
    assert_eq!(result("media_deleted"), true);
    assert!(result("job")["status"].is_string(), "{name}");
    assert_eq!(result("job_cancelled"), true);
    assert_eq!(result("released"), true);
    assert_eq!(result("app_deleted"), true);
    assert_eq!(error_code("unknown_method"), -32601, "{name}");
    assert!(
        got["unknown_method"]["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("calls.realtime")),
        "{name}: {}",
        got["unknown_method"]
    );
    assert_eq!(error_code("wrong_password"), 22, "{name}");
    if sdk.login_as {
        let sent = result("as_sub");
        let sent = sent.as_str().expect("an SMS hash");
        assert_eq!(result("as_sub_by_login")["hash"], sent, "{name}");
        assert_eq!(error_code("as_stranger"), 100, "{name}");
        // Sent on the sub account, which it is billed to.
        let on_sub = rpc(app, sub, "sms.get", json!([sent])).await;
        assert_eq!(on_sub["result"]["text"], "for the sub account", "{on_sub}");
    } else {
        for step in ["as_sub", "as_sub_by_login", "as_stranger"] {
            assert!(got[step]["skipped"].is_string(), "{name}: {step}");
        }
    }
}

async fn the_official_python_sdk_works_unchanged_over_https(backend: Backend) {
    let has_sdk = tokio::process::Command::new("python3")
        .args(["-c", "import callr"])
        .output()
        .await
        .is_ok_and(|o| o.status.success());
    if !has_sdk {
        crate::helpers::skip(
            "python3 with the callr SDK is not installed (pip install callr==2.1.0 future)",
        );
        return;
    }
    let Some(app) = spawn_https(backend, "127.0.0.1:0").await else {
        return;
    };
    let (https, cert) = app.https.clone().expect("HTTPS runs");
    let (acct, sub, vars) = prepare(&app).await;
    let mut command = tokio::process::Command::new("python3");
    command
        .arg(format!("{SDK_DIR}/callr_sdk.py"))
        .args([&https, &acct.login, &acct.password])
        .env("SSL_CERT_FILE", &cert);
    let got = drive(command, &vars).await;
    check(
        &app,
        &sub,
        Sdk {
            name: "python",
            login_as: false,
        },
        &got,
    )
    .await;
}

/// A loopback address whose port 443 this process may bind now, or why not.
fn free_loopback_443() -> Result<String, String> {
    let mut last = String::new();
    for _ in 0..20 {
        let n: u8 = 2 + rand::random::<u8>() % 250;
        let addr = format!("127.0.0.{n}:443");
        match std::net::TcpListener::bind(&addr) {
            Ok(_) => return Ok(addr),
            Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
                return Err(format!("binding port 443 is not permitted here ({e})"));
            }
            Err(e) => last = e.to_string(),
        }
    }
    Err(format!("no free 127.0.0.N:443 ({last})"))
}

async fn the_official_node_sdk_works_unchanged_over_https_on_443(backend: Backend) {
    let module = Path::new(SDK_DIR).join("node/node_modules/callr");
    let has_node = tokio::process::Command::new("node")
        .arg("--version")
        .output()
        .await
        .is_ok_and(|o| o.status.success());
    if !has_node || !module.exists() {
        crate::helpers::skip(
            "node with the callr SDK is not installed (npm ci --prefix crates/server/tests/sdk/node)",
        );
        return;
    }
    let addr = match free_loopback_443() {
        Ok(addr) => addr,
        Err(why) => {
            crate::helpers::skip(&format!("the Node.js SDK needs port 443: {why}"));
            return;
        }
    };
    let Some(app) = spawn_https(backend, &addr).await else {
        return;
    };
    let (https, cert) = app.https.clone().expect("HTTPS runs");
    assert!(https.ends_with(":443"), "{https}");
    let (acct, sub, vars) = prepare(&app).await;
    let host = https.trim_end_matches(":443");
    let mut command = tokio::process::Command::new("node");
    command
        .arg(format!("{SDK_DIR}/node/callr_sdk.js"))
        .args([host, &acct.login, &acct.password])
        .env("NODE_EXTRA_CA_CERTS", &cert);
    let got = drive(command, &vars).await;
    check(
        &app,
        &sub,
        Sdk {
            name: "node",
            login_as: true,
        },
        &got,
    )
    .await;
}

async fn the_official_java_sdk_works_unchanged_over_https(backend: Backend) {
    let Ok(classpath) = std::env::var("DIALTONE_JAVA_SDK") else {
        // Not a peer CI can install (the SDK is on no registry it reaches): see the module
        // documentation and docs/decisions.md.
        eprintln!(
            "SKIPPED (not required): DIALTONE_JAVA_SDK is unset (the class path of THECALLR/sdk-java, gson and commons-codec)"
        );
        return;
    };
    let Some(app) = spawn_https(backend, "127.0.0.1:0").await else {
        return;
    };
    let (https, cert) = app.https.clone().expect("HTTPS runs");
    let work = tempfile::tempdir().expect("dir");
    let store = work.path().join("trust.p12");
    let imported = std::process::Command::new("keytool")
        .args([
            "-importcert",
            "-noprompt",
            "-alias",
            "dialtone",
            "-storetype",
            "PKCS12",
        ])
        .arg("-file")
        .arg(&cert)
        .arg("-keystore")
        .arg(&store)
        .args(["-storepass", "changeit"])
        .output()
        .expect("keytool");
    assert!(imported.status.success(), "{imported:?}");
    let compiled = std::process::Command::new("javac")
        .args(["-cp", &classpath, "-d"])
        .arg(work.path())
        .arg(format!("{SDK_DIR}/java/CallrSdk.java"))
        .output()
        .expect("javac");
    assert!(compiled.status.success(), "{compiled:?}");
    let (acct, sub, vars) = prepare(&app).await;
    let mut command = tokio::process::Command::new("java");
    command
        .arg(format!("-Djavax.net.ssl.trustStore={}", store.display()))
        .arg("-Djavax.net.ssl.trustStorePassword=changeit")
        .arg("-Djavax.net.ssl.trustStoreType=PKCS12")
        .arg("-cp")
        .arg(format!("{classpath}:{}", work.path().display()))
        .arg("CallrSdk")
        .args([&https, &acct.login, &acct.password]);
    let got = drive(command, &vars).await;
    check(
        &app,
        &sub,
        Sdk {
            name: "java",
            login_as: true,
        },
        &got,
    )
    .await;
}
