//! The `dialtone` binary as a user runs it: first start, graceful stop, operator commands.

#![allow(
    clippy::unwrap_used,
    clippy::too_many_lines,
    reason = "tests: a failed unwrap is a failed test, and a scenario reads best whole"
)]

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn dialtone(dir: &std::path::Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_dialtone"));
    cmd.arg("--data-dir")
        .arg(dir)
        .env_remove("DIALTONE_DATABASE_URL")
        .env("RUST_LOG", "warn");
    cmd
}

/// Starts `serve` on a free port; returns the child and the address it listens on.
fn start(dir: &std::path::Path) -> (std::process::Child, String) {
    let mut child = dialtone(dir)
        .args(["serve", "--listen", "127.0.0.1:0"])
        .env("RUST_LOG", "info")
        .env("DIALTONE_LOG_FORMAT", "json")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn dialtone serve");
    let stdout = child.stdout.take().expect("stdout");
    let stderr = child.stderr.take().expect("stderr");
    // The stdout lines (the dev account) come before the listening log line on stderr.
    let out = std::thread::spawn(move || {
        BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
            .collect::<Vec<_>>()
    });
    let mut addr = String::new();
    for line in BufReader::new(stderr).lines().map_while(Result::ok) {
        if line.contains("dialtone listening") {
            let v: serde_json::Value = serde_json::from_str(&line).expect("json log line");
            addr = v["fields"]["addr"].as_str().expect("addr").to_owned();
            break;
        }
    }
    assert!(!addr.is_empty(), "the server never said it was listening");
    drop(out); // the reader thread keeps draining stdout until the child exits
    (child, addr)
}

fn terminate(child: &mut std::process::Child) -> std::process::ExitStatus {
    Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("kill");
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            return status;
        }
        assert!(
            Instant::now() < deadline,
            "the server did not stop on SIGTERM"
        );
        std::thread::park_timeout(Duration::from_millis(20));
    }
}

#[test]
fn first_start_prints_a_working_dev_account_once_and_sigterm_stops_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = dialtone(dir.path())
        .args(["serve", "--listen", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut printed = Vec::new();
    let mut curl = None;
    for line in stdout.by_ref().map_while(Result::ok) {
        if line.trim_start().starts_with("curl ") {
            curl = Some(line.trim().to_owned());
            break;
        }
        printed.push(line);
    }
    let text = printed.join("\n");
    for label in ["account SID", "API key", "login", "password"] {
        assert!(text.contains(label), "{label} missing from:\n{text}");
    }
    assert!(text.contains("dev"), "{text}");
    let curl = curl.expect("a curl line");
    let key = curl
        .split("x-api-key: ")
        .nth(1)
        .unwrap()
        .split('\'')
        .next()
        .unwrap()
        .to_owned();
    let url = curl.split_whitespace().last().unwrap().to_owned();
    assert!(key.starts_with("dt_"));
    let resp = reqwest::blocking::Client::new()
        .get(&url)
        .header("x-api-key", &key)
        .send()
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert!(
        dir.path().join("dialtone.db").exists(),
        "SQLite file under the data dir"
    );
    // HTTPS beside it, with the self-signed certificate it made and printed.
    let mut https = Vec::new();
    for line in stdout.by_ref().map_while(Result::ok) {
        let done = line.trim_start().starts_with("curl --cacert");
        https.push(line);
        if done {
            break;
        }
    }
    let https = https.join("\n");
    let cert = dir.path().join("tls").join("cert.pem");
    assert!(https.contains(&cert.display().to_string()), "{https}");
    let pem = std::fs::read(&cert).expect("the certificate is kept");
    let fingerprint = {
        use rustls_pki_types::pem::PemObject;
        dialtone::tls::fingerprint(&rustls_pki_types::CertificateDer::from_pem_slice(&pem).unwrap())
    };
    assert!(
        https.contains(&fingerprint),
        "the fingerprint is printed: {https}"
    );
    let https_url = https
        .lines()
        .find_map(|l| l.trim().strip_prefix("HTTPS: "))
        .expect("the HTTPS address")
        .to_owned();
    let trusting = reqwest::blocking::Client::builder()
        .tls_built_in_root_certs(false)
        .add_root_certificate(reqwest::Certificate::from_pem(&pem).unwrap())
        .build()
        .unwrap();
    let resp = trusting
        .get(format!("{https_url}/v2.0/ping"))
        .header("x-api-key", &key)
        .send()
        .unwrap();
    assert_eq!(resp.status(), 200, "ping over HTTPS");
    assert!(terminate(&mut child).success(), "SIGTERM is a clean exit");
    drop(stdout);

    // Second start on the same data: no new dev account is printed.
    let (mut child, addr) = start(dir.path());
    let resp = reqwest::blocking::Client::new()
        .get(format!("http://{addr}/v2.0/ping"))
        .header("x-api-key", &key)
        .send()
        .unwrap();
    assert_eq!(resp.status(), 200, "the dev key survives a restart");
    let stopped = terminate(&mut child);
    assert!(stopped.success(), "{stopped:?}");
    let list = dialtone(dir.path())
        .args(["account", "list", "--json"])
        .output()
        .unwrap();
    let list: serde_json::Value = serde_json::from_slice(&list.stdout).unwrap();
    assert_eq!(
        list.as_array().unwrap().len(),
        1,
        "one dev account after two starts"
    );
}

#[test]
fn operator_commands_create_list_and_manage_keys() {
    let dir = tempfile::tempdir().unwrap();
    let out = dialtone(dir.path()).arg("migrate").output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = dialtone(dir.path())
        .args([
            "account", "create", "--name", "acme", "--credit", "500.25", "--json",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let made: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(made["credit"], "500.25");
    let sid = made["sid"].as_str().unwrap().to_owned();
    assert!(made["apiKey"].as_str().unwrap().starts_with("dt_"));
    let out = dialtone(dir.path())
        .args([
            "account", "create", "--name", "acme-sub", "--parent", &sid, "--json",
        ])
        .output()
        .unwrap();
    let sub: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(sub["parent"], sid.as_str());

    let out = dialtone(dir.path())
        .args(["key", "create", "--account", &sid])
        .output()
        .unwrap();
    assert!(out.status.success());
    let key = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .next()
        .unwrap()
        .to_owned();
    assert!(key.starts_with("dt_"));
    let key_id = &key[..11];
    let out = dialtone(dir.path())
        .args(["key", "revoke", "--account", &sid, "--key", key_id])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = dialtone(dir.path())
        .args(["key", "revoke", "--account", &sid, "--key", key_id])
        .output()
        .unwrap();
    assert!(!out.status.success(), "revoking twice fails");

    let out = dialtone(dir.path())
        .args(["account", "list"])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("acme") && text.contains(&sid), "{text}");

    let bad = dialtone(dir.path())
        .args(["account", "create", "--name", "x", "--credit", "lots"])
        .output()
        .unwrap();
    assert!(!bad.status.success());
    let bad = dialtone(dir.path())
        .args(["--database-url", "mysql://x", "migrate"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
}

/// Secrets reach neither the logs nor later answers: API keys, passwords, the admin token
/// and webhook secrets are sent in every way a client sends them, at the most verbose log
/// level, and then looked for in everything the server wrote and answered.
#[test]
fn secrets_never_reach_the_logs_or_later_answers() {
    let dir = tempfile::tempdir().unwrap();
    let admin = "admin-token-for-the-secrets-test";
    let mut child = dialtone(dir.path())
        .args(["serve", "--listen", "127.0.0.1:0", "--admin-token", admin])
        .env("RUST_LOG", "trace")
        .env("DIALTONE_LOG_FORMAT", "json")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn dialtone serve");
    let stderr = child.stderr.take().expect("stderr");
    let (addr_tx, addr_rx) = std::sync::mpsc::channel();
    let log = std::thread::spawn(move || {
        let mut all = Vec::new();
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if line.contains("dialtone listening")
                && let Ok(v) = serde_json::from_str::<serde_json::Value>(&line)
            {
                let _ = addr_tx.send(v["fields"]["addr"].as_str().unwrap_or_default().to_owned());
            }
            all.push(line);
        }
        all.join("\n")
    });
    let addr = addr_rx
        .recv_timeout(Duration::from_secs(30))
        .expect("listening");
    let base = format!("http://{addr}");
    let http = reqwest::blocking::Client::new();
    let created: serde_json::Value = http
        .post(format!("{base}/admin/accounts"))
        .bearer_auth(admin)
        .json(&serde_json::json!({"name": "acme", "credit": "100.00"}))
        .send()
        .unwrap()
        .json()
        .unwrap();
    let (sid, key, login, password) = (
        created["sid"].as_str().unwrap().to_owned(),
        created["apiKey"].as_str().unwrap().to_owned(),
        created["login"].as_str().unwrap().to_owned(),
        created["password"].as_str().unwrap().to_owned(),
    );
    let hook_secret = "whsec-for-the-secrets-test-0123456789";
    let mut answers = Vec::new();
    let mut keep = |r: reqwest::blocking::Response| {
        answers.push(r.text().unwrap_or_default());
    };
    keep(
        http.get(format!("{base}/v2.0/ping"))
            .header("x-api-key", &key)
            .send()
            .unwrap(),
    );
    keep(
        http.get(format!("{base}/v2.0/ping"))
            .basic_auth(&sid, Some(&key))
            .send()
            .unwrap(),
    );
    keep(
        http.get(format!("{base}/v2.0/ping"))
            .header("x-api-key", "dt_wrongwrongwrong")
            .send()
            .unwrap(),
    );
    keep(
        http.post(format!("{base}/v2.0/webhooks?type=sms.mo"))
            .header("x-api-key", &key)
            .json(&serde_json::json!({"endpoint": "http://127.0.0.1:9/h", "options": {"hmac_secret": hook_secret}}))
            .send()
            .unwrap(),
    );
    keep(
        http.get(format!("{base}/v2.0/webhooks"))
            .header("x-api-key", &key)
            .send()
            .unwrap(),
    );
    keep(
        http.post(format!("{base}/json-rpc/v1.1/"))
            .basic_auth(&login, Some(&password))
            .json(&serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "webhooks.get_list", "params": []}))
            .send()
            .unwrap(),
    );
    keep(
        http.get(format!("{base}/rest/v1.1/sms"))
            .basic_auth(&login, Some(&password))
            .send()
            .unwrap(),
    );
    keep(
        http.get(format!("{base}/admin/accounts"))
            .bearer_auth(admin)
            .send()
            .unwrap(),
    );
    keep(
        http.get(format!("{base}/admin/accounts/{sid}"))
            .bearer_auth(admin)
            .send()
            .unwrap(),
    );
    assert!(terminate(&mut child).success());
    let logs = log.join().unwrap();
    assert!(logs.lines().count() > 3, "the server logged: {logs}");
    for secret in [key.as_str(), password.as_str(), admin, hook_secret] {
        assert!(!logs.contains(secret), "a secret is in the logs:\n{logs}");
        for a in &answers {
            assert!(
                !a.contains(secret),
                "a secret is in an answer after its creation: {a}"
            );
        }
    }
}
