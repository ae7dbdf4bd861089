//! HTTPS beside HTTP: a self-signed certificate made once and kept in the data directory,
//! or the operator's; the same interfaces over both; a client that never finishes its TLS
//! handshake holds its place only for the header timeout, within the connection limits.

use std::time::{Duration, Instant};

use dialtone::config::Tls;
use reqwest::Method;
use serde_json::json;
use tokio::io::AsyncReadExt;

use crate::helpers::{Backend, TestApp, send};

fn https_on_a_free_port(identity: Option<(std::path::PathBuf, std::path::PathBuf)>) -> Tls {
    Tls {
        listen: "127.0.0.1:0".into(),
        identity,
        required: true,
    }
}

/// A client that trusts only `cert`.
fn trusting(cert: &std::path::Path) -> reqwest::Client {
    let pem = std::fs::read(cert).expect("the certificate file");
    reqwest::Client::builder()
        .tls_built_in_root_certs(false)
        .add_root_certificate(reqwest::Certificate::from_pem(&pem).expect("PEM"))
        .build()
        .expect("client")
}

fn sha256_of_pem(cert: &std::path::Path) -> String {
    use rustls_pki_types::pem::PemObject;
    let der = rustls_pki_types::CertificateDer::from_pem_file(cert).expect("PEM");
    dialtone::tls::fingerprint(&der)
}

#[tokio::test]
async fn https_serves_beside_http_with_a_self_signed_certificate() {
    let app = TestApp::spawn_with(Backend::Sqlite, |c| {
        c.tls = Some(https_on_a_free_port(None))
    })
    .await
    .expect("sqlite");
    let (https, cert) = app.https.clone().expect("HTTPS runs");
    assert!(
        cert.starts_with(&app.state.config.data_dir),
        "kept in the data directory: {cert:?}"
    );
    let acct = app.account().await;
    let client = trusting(&cert);
    let ping = client
        .get(format!("{https}/v2.0/ping"))
        .header("x-api-key", &acct.api_key)
        .send()
        .await
        .expect("ping over HTTPS");
    assert_eq!(ping.status(), 200);
    let rpc: serde_json::Value = client
        .post(format!("{https}/json-rpc/v1.1/"))
        .basic_auth(&acct.login, Some(&acct.password))
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "system.get_timestamp", "params": []}))
        .send()
        .await
        .expect("JSON-RPC over HTTPS")
        .json()
        .await
        .expect("JSON");
    assert_eq!(rpc["result"], 1_748_779_200, "{rpc}");
    // Plain HTTP still answers beside it.
    let (status, _) = send(app.req(&acct, Method::GET, "/v2.0/ping")).await;
    assert_eq!(status, 200);
    // A client that does not trust the certificate refuses it.
    let strict = reqwest::Client::new();
    let err = strict
        .get(format!("{https}/livez"))
        .send()
        .await
        .expect_err("untrusted");
    assert!(
        format!("{err:?}").to_lowercase().contains("certificate"),
        "{err:?}"
    );
    // localhost is one of its names.
    let port = https.rsplit(':').next().expect("port");
    let by_name = client
        .get(format!("https://localhost:{port}/livez"))
        .send()
        .await
        .expect("by name");
    assert_eq!(by_name.status(), 200);
    // The same certificate on the next start.
    let before = sha256_of_pem(&cert);
    let again = dialtone::tls::self_signed(
        cert.parent().expect("dir"),
        &dialtone::tls::self_signed_names("127.0.0.1".parse().expect("ip")),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("time")
            .as_secs() as i64,
    )
    .expect("kept");
    assert_eq!(again.fingerprint, before);
}

#[tokio::test]
async fn the_operators_certificate_is_served() {
    let made = tempfile::tempdir().expect("dir");
    let names = vec!["dialtone.test".to_owned(), "127.0.0.1".to_owned()];
    dialtone::tls::self_signed(made.path(), &names, 1_780_000_000).expect("a certificate");
    let (cert, key) = (made.path().join("cert.pem"), made.path().join("key.pem"));
    let app = TestApp::spawn_with(Backend::Sqlite, |c| {
        c.tls = Some(https_on_a_free_port(Some((cert.clone(), key.clone()))))
    })
    .await
    .expect("sqlite");
    let (https, served) = app.https.clone().expect("HTTPS runs");
    assert_eq!(served, cert);
    let livez = trusting(&cert)
        .get(format!("{https}/livez"))
        .send()
        .await
        .expect("HTTPS with the operator's certificate");
    assert_eq!(livez.status(), 200);
    // A key that does not match is refused at start, saying so.
    let other = tempfile::tempdir().expect("dir");
    dialtone::tls::self_signed(other.path(), &names, 1_780_000_000).expect("another");
    let err = dialtone::tls::load(&cert, &other.path().join("key.pem")).expect_err("mismatch");
    assert!(format!("{err:#}").contains("does not match"), "{err:#}");
}

/// Connections that open TLS and say nothing: each is closed after the header timeout, and
/// while they wait they count against the address's connections like any other.
#[tokio::test]
async fn a_silent_tls_client_holds_its_place_only_until_the_header_timeout() {
    let app = TestApp::spawn_with(Backend::Sqlite, |c| {
        c.tls = Some(https_on_a_free_port(None));
        c.header_timeout_ms = 400;
        c.max_connections_per_ip = 2;
    })
    .await
    .expect("sqlite");
    let (https, cert) = app.https.clone().expect("HTTPS runs");
    let addr = https.trim_start_matches("https://").to_owned();
    let started = Instant::now();
    let mut silent = Vec::new();
    for _ in 0..2 {
        silent.push(
            tokio::net::TcpStream::connect(&addr)
                .await
                .expect("connect"),
        );
    }
    // A third from the same address is over the limit: closed at once, without a handshake.
    let mut third = tokio::net::TcpStream::connect(&addr)
        .await
        .expect("connect");
    let mut buf = [0u8; 16];
    let n = tokio::time::timeout(Duration::from_secs(5), third.read(&mut buf))
        .await
        .expect("closed at once")
        .unwrap_or(0);
    assert_eq!(n, 0, "closed without a word");
    assert!(
        started.elapsed() < Duration::from_millis(300),
        "refused at once, not after the timeout: {:?}",
        started.elapsed()
    );
    // The silent ones are dropped after the header timeout (not held for ever).
    for mut s in silent {
        let n = tokio::time::timeout(Duration::from_secs(5), s.read(&mut buf))
            .await
            .expect("dropped within the bound")
            .unwrap_or(0);
        assert_eq!(n, 0);
    }
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_millis(350),
        "not before the timeout: {waited:?}"
    );
    // Then the address is served again.
    let livez = trusting(&cert)
        .get(format!("{https}/livez"))
        .send()
        .await
        .expect("served again");
    assert_eq!(livez.status(), 200);
}
