//! Building, starting and stopping the server under test.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::load;

/// The operator token of the servers it starts.
pub(crate) const ADMIN: &str = "bench-admin-token-0123456789";

/// Builds the release binary and returns its path.
pub(crate) fn build_release() -> anyhow::Result<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap_or(Path::new("."));
    let status = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .args(["build", "--release", "-p", "dialtone"])
        .current_dir(root)
        .status()?;
    anyhow::ensure!(status.success(), "cargo build --release failed");
    Ok(root.join("target/release/dialtone"))
}

/// A running server.
pub(crate) struct Server {
    child: Option<Child>,
    dir: tempfile::TempDir,
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    /// The database it uses.
    pub database_url: String,
    /// From spawn to the first ready answer.
    pub ready_after: Duration,
    account_sid: Option<String>,
}

fn spawn(binary: &Path, dir: &Path, url: &str) -> anyhow::Result<(Child, String)> {
    spawn_with(binary, dir, url, &[])
}

fn spawn_with(
    binary: &Path,
    dir: &Path,
    url: &str,
    extra: &[&str],
) -> anyhow::Result<(Child, String)> {
    let mut child = Command::new(binary)
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--log-format",
            "json",
            "--admin-token",
            ADMIN,
            // The held-calls benchmark holds 2,000 calls, each with its run.
            "--quota-running-runs",
            "100000",
        ])
        .arg("--data-dir")
        .arg(dir)
        .args(["--database-url", url])
        .args(extra)
        .env("RUST_LOG", "info")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()?;
    let stderr = child
        .stderr
        .take()
        .ok_or_else(|| anyhow::anyhow!("no stderr"))?;
    let mut lines = BufReader::new(stderr).lines();
    let addr = loop {
        let line = lines
            .next()
            .ok_or_else(|| anyhow::anyhow!("the server exited before listening"))??;
        if line.contains("dialtone listening") {
            let v: Value = serde_json::from_str(&line)?;
            break v["fields"]["addr"].as_str().unwrap_or_default().to_owned();
        }
    };
    // Keep draining the log so the server never blocks on a full pipe.
    std::thread::spawn(move || for _ in lines.by_ref() {});
    Ok((child, format!("http://{addr}")))
}

async fn wait_ready(base: &str) -> anyhow::Result<()> {
    for _ in 0..10_000 {
        if let Ok((200, _)) = load::once(base, "GET", "/readyz", None, None).await {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    anyhow::bail!("never ready")
}

impl Server {
    /// Starts on a fresh database and waits until it is ready.
    pub(crate) async fn start(binary: &Path, pg: Option<&str>) -> anyhow::Result<Self> {
        Self::start_with(binary, pg, &[]).await
    }

    /// Like [`Server::start`], with more flags for the server.
    pub(crate) async fn start_with(
        binary: &Path,
        pg: Option<&str>,
        extra: &[&str],
    ) -> anyhow::Result<Self> {
        let dir = tempfile::tempdir()?;
        let database_url = match pg {
            Some(url) => crate::seed::fresh_schema(url).await?,
            None => format!("sqlite:{}", dir.path().join("dialtone.db").display()),
        };
        let started = Instant::now();
        let (child, base) = spawn_with(binary, dir.path(), &database_url, extra)?;
        wait_ready(&base).await?;
        let ready_after = started.elapsed();
        Ok(Self {
            child: Some(child),
            dir,
            base,
            database_url,
            ready_after,
            account_sid: None,
        })
    }

    /// Another node on `database_url` (PostgreSQL), sharing it with running ones.
    pub(crate) async fn join(binary: &Path, database_url: &str) -> anyhow::Result<Self> {
        let dir = tempfile::tempdir()?;
        let started = Instant::now();
        let (child, base) = spawn(binary, dir.path(), database_url)?;
        wait_ready(&base).await?;
        Ok(Self {
            child: Some(child),
            dir,
            base,
            database_url: database_url.to_owned(),
            ready_after: started.elapsed(),
            account_sid: None,
        })
    }

    /// Bytes the SQLite database takes on disk (its file and its WAL).
    pub(crate) fn sqlite_bytes(&self) -> u64 {
        ["dialtone.db", "dialtone.db-wal"]
            .iter()
            .filter_map(|f| std::fs::metadata(self.dir.path().join(f)).ok())
            .map(|m| m.len())
            .sum()
    }

    /// Starts again on the same database.
    pub(crate) async fn restart(&mut self, binary: &Path) -> anyhow::Result<()> {
        let (child, base) = spawn(binary, self.dir.path(), &self.database_url)?;
        self.child = Some(child);
        self.base = base;
        wait_ready(&self.base).await
    }

    /// Kills it with SIGKILL: no shutdown, no flush, as a crash or a pulled plug.
    pub(crate) fn kill9(&mut self) -> anyhow::Result<()> {
        if let Some(mut child) = self.child.take() {
            child.kill()?;
            child.wait()?;
        }
        Ok(())
    }

    /// Stops it (SIGTERM, then waits).
    pub(crate) async fn stop(&mut self) -> anyhow::Result<()> {
        if let Some(mut child) = self.child.take() {
            Command::new("kill")
                .args(["-TERM", &child.id().to_string()])
                .status()?;
            child.wait()?;
        }
        Ok(())
    }

    /// Resident memory of the server process, in KiB.
    pub(crate) fn rss_kb(&self) -> anyhow::Result<u64> {
        self.proc_status("VmRSS:")
    }

    /// Peak resident memory of the server process since it started, in KiB.
    pub(crate) fn peak_rss_kb(&self) -> anyhow::Result<u64> {
        self.proc_status("VmHWM:")
    }

    /// CPU time the server process has used so far (user and system, every thread), in
    /// milliseconds: the cost of a benchmark, whatever the load generator beside it uses.
    pub(crate) fn cpu_ms(&self) -> anyhow::Result<f64> {
        let pid = self.child.as_ref().map_or(0, Child::id);
        stat_cpu_ms(&std::fs::read_to_string(format!("/proc/{pid}/stat"))?)
    }

    fn proc_status(&self, field: &str) -> anyhow::Result<u64> {
        let pid = self.child.as_ref().map_or(0, Child::id);
        let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
        let line = status
            .lines()
            .find(|l| l.starts_with(field))
            .ok_or_else(|| anyhow::anyhow!("no {field}"))?;
        Ok(line.split_whitespace().nth(1).unwrap_or("0").parse()?)
    }

    /// Creates an account with `credit` cents and returns its API key; the account the
    /// benchmarks act as ([`Server::account_sid`]).
    pub(crate) async fn account(&mut self, name: &str, credit: &str) -> anyhow::Result<String> {
        let (sid, key) = self.create_account(name, credit).await?;
        self.account_sid = Some(sid);
        Ok(key)
    }

    /// Creates another account with `credit` cents and returns its API key.
    pub(crate) async fn other_account(&self, name: &str, credit: &str) -> anyhow::Result<String> {
        Ok(self.create_account(name, credit).await?.1)
    }

    /// Creates an account: its sid and API key.
    pub(crate) async fn create_account(
        &self,
        name: &str,
        credit: &str,
    ) -> anyhow::Result<(String, String)> {
        let body = serde_json::json!({"name": name, "credit": credit}).to_string();
        let (status, v) = load::once(
            &self.base,
            "POST",
            "/admin/accounts",
            Some(&format!("Bearer {ADMIN}")),
            Some(&body),
        )
        .await?;
        anyhow::ensure!(status == 201, "account creation failed: {v}");
        let field = |f: &str| v[f].as_str().unwrap_or_default().to_owned();
        Ok((field("sid"), field("apiKey")))
    }

    /// Adds `amount` to the credit of the account [`Server::account`] made, through the
    /// operator API (a `billing.credit` event).
    pub(crate) async fn top_up(&self, amount: &str) -> anyhow::Result<()> {
        let body = serde_json::json!({ "amount": amount }).to_string();
        let path = format!("/admin/accounts/{}/credit", self.account_sid()?);
        let (status, v) = load::once(
            &self.base,
            "POST",
            &path,
            Some(&format!("Bearer {ADMIN}")),
            Some(&body),
        )
        .await?;
        anyhow::ensure!(status == 200, "top-up failed: {v}");
        Ok(())
    }

    /// The sid of the account [`Server::account`] made.
    pub(crate) fn account_sid(&self) -> anyhow::Result<String> {
        self.account_sid
            .clone()
            .ok_or_else(|| anyhow::anyhow!("no account was made"))
    }

    /// A POST with the key.
    pub(crate) async fn post(&self, key: &str, path: &str, body: &Value) -> anyhow::Result<Value> {
        let (status, v) =
            load::once_key(&self.base, "POST", path, key, Some(&body.to_string())).await?;
        anyhow::ensure!((200..300).contains(&status), "POST {path}: {status} {v}");
        Ok(v)
    }

    /// Waits until every row of `finish` is done; returns how many there are.
    pub(crate) async fn wait_finished(
        &self,
        finish: &crate::seed::Finish,
        limit: Duration,
    ) -> anyhow::Result<i64> {
        let store = crate::seed::open(&self.database_url).await?;
        crate::seed::wait_finished(&store, finish, limit).await
    }

    /// Reserves and buys a GB mobile number for the account of `key`: its E.164.
    pub(crate) async fn buy_number(&self, key: &str) -> anyhow::Result<String> {
        let reservation = self
            .post(
                key,
                "/v2.0/numbers/store?country=GB&type=mobile&quantity=1",
                &serde_json::json!({}),
            )
            .await?;
        let token = reservation["token"].as_str().unwrap_or_default();
        let bought = self
            .post(
                key,
                &format!("/v2.0/numbers/store/{token}"),
                &serde_json::json!({}),
            )
            .await?;
        Ok(bought["numbers"][0]["e164"]
            .as_str()
            .ok_or_else(|| anyhow::anyhow!("no number: {bought}"))?
            .to_owned())
    }

    /// A GET with the key.
    pub(crate) async fn get(&self, key: &str, path: &str) -> anyhow::Result<Value> {
        Ok(load::once_key(&self.base, "GET", path, key, None).await?.1)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// User and system CPU time of a process, in milliseconds, from its `/proc/PID/stat` line.
pub(crate) fn stat_cpu_ms(stat: &str) -> anyhow::Result<f64> {
    // Fields after the command name (which may hold spaces) end with ')'.
    let rest = stat
        .rsplit_once(')')
        .map(|(_, r)| r)
        .ok_or_else(|| anyhow::anyhow!("bad /proc stat"))?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the ')'.
    let ticks: u64 = fields
        .get(11..13)
        .ok_or_else(|| anyhow::anyhow!("short /proc stat"))?
        .iter()
        .map(|f| f.parse::<u64>())
        .sum::<Result<u64, _>>()?;
    // Linux reports them in USER_HZ, 100 per second on every platform it runs on.
    Ok(ticks as f64 * 10.0)
}
