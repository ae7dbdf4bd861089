//! The official `callr` Python SDK (PyPI `callr==2.1.0`) works unchanged against the
//! JSON-RPC interface. Skipped, saying so, when Python or the SDK is missing (.ci/run
//! installs them).

use serde_json::Value;

use crate::both_backends;
use crate::helpers::TestApp;

both_backends!(the_official_python_sdk_works_unchanged);

async fn the_official_python_sdk_works_unchanged(app: TestApp) {
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
    let acct = app.account().await;
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/sdk/callr_sdk.py");
    let out = tokio::process::Command::new("python3")
        .args([script, &app.base, &acct.login, &acct.password])
        .output()
        .await
        .expect("run python3");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got: Value = serde_json::from_slice(&out.stdout).expect("the script prints JSON");
    assert_eq!(got["timestamp"], 1_748_779_200);
    let hash = got["hash"].as_str().unwrap();
    assert_eq!(hash.len(), 8);
    assert_eq!(hash, hash.to_uppercase());
    let sms = &got["sms"];
    assert_eq!(sms["hash"], hash);
    assert_eq!(sms["type"], "OUT");
    assert_eq!(sms["from"], "SMS");
    assert_eq!(sms["to"], "+33612345678");
    assert_eq!(sms["text"], "Hello from the SDK");
    assert_eq!(sms["status"], "CREATED");
    assert_eq!(sms["encoding"], "GSM");
    assert_eq!(sms["nature"], "MARKETING");
    assert_eq!(sms["date_sent"], "0000-00-00 00:00:00");
    assert_eq!(sms["date_creation"], "2025-06-01 12:00:00");
    let list = got["list"].as_array().unwrap();
    assert_eq!(list.len(), 2);
    let flash = list
        .iter()
        .find(|s| s["hash"] == got["hash_with_options"])
        .unwrap();
    assert_eq!(flash["options"]["flash_message"], true);
    assert_eq!(flash["nature"], "ALERTING");
    assert_eq!(flash["user_data"], "42");
    assert_eq!(got["missing"]["code"], 115);
    assert_eq!(got["wrong_password"]["code"], 22);
}
