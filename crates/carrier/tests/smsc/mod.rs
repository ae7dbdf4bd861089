//! The test SMSC: `smsc.py` beside this file, on the `smpp34` package (an SMPP server the
//! project does not write). Tests that need it print SKIPPED and pass when Python or the
//! package is missing (`pip install smpp34` installs it), and fail when
//! `DIALTONE_REQUIRE_PEERS` is set, as CI sets it.

#![allow(dead_code)]

use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

/// How long a test waits for one thing the SMSC reports.
pub(crate) const WAIT: Duration = Duration::from_secs(10);

/// A running test SMSC on loopback.
pub(crate) struct TestSmsc {
    child: Child,
    stdin: ChildStdin,
    lines: Lines<BufReader<ChildStdout>>,
    /// Its port on 127.0.0.1.
    pub port: u16,
}

fn python() -> String {
    std::env::var("DIALTONE_SMSC_PYTHON").unwrap_or_else(|_| "python3".to_owned())
}

/// A free loopback port.
pub(crate) fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

impl TestSmsc {
    /// Starts the SMSC on a free port; None (after printing SKIPPED) without smpp34.
    pub(crate) async fn start(test: &str) -> Option<Self> {
        Self::start_on(test, free_port()).await
    }

    /// Starts the SMSC on `port`.
    pub(crate) async fn start_on(test: &str, port: u16) -> Option<Self> {
        Self::start_with(test, port, &[]).await
    }

    /// Starts the SMSC on `port` with more arguments for smsc.py.
    pub(crate) async fn start_with(test: &str, port: u16, extra: &[String]) -> Option<Self> {
        let probe = Command::new(python())
            .args(["-c", "import smpp34"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .await;
        if !matches!(probe, Ok(s) if s.success()) {
            assert!(
                std::env::var_os("DIALTONE_REQUIRE_PEERS").is_none(),
                "{test}: a required peer is missing: python3 with smpp34"
            );
            eprintln!(
                "SKIPPED {test}: the test SMSC needs python3 with smpp34 (pip install smpp34)"
            );
            return None;
        }
        // Found from the carrier crate's tests and from the server's.
        let manifest = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let script = [
            manifest.join("tests/smsc/smsc.py"),
            manifest.join("../carrier/tests/smsc/smsc.py"),
        ]
        .into_iter()
        .find(|p| p.exists())
        .expect("smsc.py beside the SMSC helper");
        let mut child = Command::new(python())
            .arg(&script)
            .arg(port.to_string())
            .args(extra)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn the test SMSC");
        let stdin = child.stdin.take().expect("stdin");
        let lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
        let mut smsc = Self {
            child,
            stdin,
            lines,
            port,
        };
        smsc.expect("ready").await;
        Some(smsc)
    }

    /// The next report whose `ev` is `ev` (earlier ones are skipped); panics after [`WAIT`].
    pub(crate) async fn expect(&mut self, ev: &str) -> Value {
        self.expect_any(&[ev]).await
    }

    /// The next report whose `ev` is one of `evs` (earlier ones are skipped); panics after
    /// [`WAIT`].
    pub(crate) async fn expect_any(&mut self, evs: &[&str]) -> Value {
        let found = tokio::time::timeout(WAIT, async {
            while let Ok(Some(line)) = self.lines.next_line().await {
                let v: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
                if evs.iter().any(|ev| v["ev"] == *ev) {
                    return Some(v);
                }
            }
            None
        })
        .await;
        match found {
            Ok(Some(v)) => v,
            Ok(None) => panic!("the test SMSC ended before reporting {evs:?}"),
            Err(_) => panic!("the test SMSC did not report {evs:?} in time"),
        }
    }

    /// Sends a command (see smsc.py).
    pub(crate) async fn send(&mut self, cmd: Value) {
        let line = format!("{cmd}\n");
        self.stdin
            .write_all(line.as_bytes())
            .await
            .expect("write to the test SMSC");
        self.stdin.flush().await.expect("flush");
    }

    /// Freezes (`true`) or thaws the SMSC process: its connections stay open, silent.
    pub(crate) fn freeze(&self, frozen: bool) {
        if let Some(pid) = self.child.id() {
            let signal = if frozen { "-STOP" } else { "-CONT" };
            let _ = std::process::Command::new("kill")
                .args([signal, &pid.to_string()])
                .status();
        }
    }

    /// Kills the SMSC at once: every connection drops mid-flight.
    pub(crate) async fn kill(mut self) {
        let _ = self.child.kill().await;
    }
}
