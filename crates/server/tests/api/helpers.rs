//! Spawning a server per test on a fresh database, with a manual clock, and typed helpers.

use std::sync::Arc;

use dialtone::Application;
use dialtone::config::Config;
use dialtone::state::AppState;
use dialtone_domain::{ManualClock, Timestamp};
use dialtone_store::DatabaseUrl;
use dialtone_store::test_schema::TestSchema;
use reqwest::{Method, RequestBuilder, StatusCode};
use serde_json::Value;

pub(crate) const ADMIN_TOKEN: &str = "test-admin-token-0123456789";
/// Every test starts at this instant: 2025-06-01T12:00:00.000Z.
pub(crate) const START: i64 = 1_748_779_200_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Backend {
    Sqlite,
    Postgres,
}

/// Runs an async test function against both backends, as `name::sqlite` and `name::postgres`.
#[macro_export]
macro_rules! both_backends {
    ($($name:ident),+ $(,)?) => {$(
        mod $name {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() {
                let app = $crate::helpers::TestApp::spawn($crate::helpers::Backend::Sqlite).await.expect("sqlite app");
                super::$name(app).await;
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres() {
                let Some(app) = $crate::helpers::TestApp::spawn($crate::helpers::Backend::Postgres).await else {
                    $crate::helpers::skip("set DIALTONE_TEST_DATABASE_URL to run this test on PostgreSQL");
                    return;
                };
                super::$name(app).await;
            }
        }
    )+};
}

/// Says a test is skipped because a peer is missing; in CI (`DIALTONE_REQUIRE_PEERS` set by
/// `.ci/run`, where every peer is installed) a missing peer fails the test instead.
pub(crate) fn skip(reason: &str) {
    assert!(
        std::env::var_os("DIALTONE_REQUIRE_PEERS").is_none(),
        "a required peer is missing: {reason}"
    );
    eprintln!("SKIPPED: {reason}");
}

/// A running server on a fresh database.
pub(crate) struct TestApp {
    pub base: String,
    /// `https://ADDR` and the certificate to trust, when the test asked for HTTPS.
    pub https: Option<(String, std::path::PathBuf)>,
    pub client: reqwest::Client,
    pub clock: ManualClock,
    pub backend: Backend,
    pub state: AppState,
    config: Config,
    _dir: tempfile::TempDir,
    _schema: Option<TestSchema>,
}

/// An account made through the operator API, with its secrets.
#[derive(Debug, Clone)]
pub(crate) struct TestAccount {
    pub sid: String,
    pub api_key: String,
    pub login: String,
    pub password: String,
}

impl TestApp {
    /// A server on `backend`; None for PostgreSQL when no test database is configured.
    pub(crate) async fn spawn(backend: Backend) -> Option<Self> {
        Self::spawn_with(backend, |_| {}).await
    }

    /// Like [`TestApp::spawn`], with a chance to change the configuration.
    pub(crate) async fn spawn_with(
        backend: Backend,
        adjust: impl FnOnce(&mut Config),
    ) -> Option<Self> {
        // The server's warnings and errors go to the test's output (shown when it fails).
        let _ = tracing_subscriber::fmt()
            .with_env_filter(
                tracing_subscriber::EnvFilter::try_from_default_env()
                    .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
            )
            .with_test_writer()
            .try_init();
        let dir = tempfile::tempdir().expect("temp dir");
        let mut config = Config::embedded(dir.path());
        config.listen = "127.0.0.1:0".into();
        config.admin_token = Some(ADMIN_TOKEN.into());
        config.dev_account = false;
        config.db_connections = Some(2);
        config.run_workers = false;
        // Audio converts in a child process: this package's own binary.
        config.audio_converter = Some(env!("CARGO_BIN_EXE_dialtone").into());
        let mut schema = None;
        if backend == Backend::Postgres {
            let admin_url = std::env::var("DIALTONE_TEST_DATABASE_URL").ok()?;
            let name = format!("t_{}", hex_id());
            let (made, url) = tokio::task::spawn_blocking(move || {
                TestSchema::create(&admin_url, &name).expect("the test's schema")
            })
            .await
            .expect("join");
            config.database_url = url;
            schema = Some(made);
        }
        adjust(&mut config);
        let clock = ManualClock::new(Timestamp::from_millis(START));
        let (base, https, state) = start(config.clone(), &clock).await;
        Some(Self {
            base,
            https,
            client: reqwest::Client::new(),
            clock,
            backend,
            state,
            config,
            _dir: dir,
            _schema: schema,
        })
    }

    /// The URL of the test's PostgreSQL schema (a session of the test's own beside the
    /// server's, to race it); None on SQLite.
    pub(crate) fn postgres_url(&self) -> Option<String> {
        match &self.config.database_url {
            DatabaseUrl::Postgres(url) => Some(url.clone()),
            DatabaseUrl::Sqlite(_) => None,
        }
    }

    /// Runs every kind of due background work once, as the workers would, and waits (at
    /// most 30 s) for what it started on tasks of their own (SMS submissions, webhook tries,
    /// runs, conversions) to end.
    pub(crate) async fn tick(&self) -> usize {
        let n = self.tick_detached().await;
        let settled = async {
            self.state.submissions.settled().await;
            self.state.deliveries.settled().await;
            self.state.runs.settled().await;
            self.state.conversions.settled().await;
            self.state.transcriptions.settled().await;
        };
        tokio::time::timeout(std::time::Duration::from_secs(120), settled)
            .await
            .expect("the work a tick started settles within its leases");
        n
    }

    /// Runs every kind of due background work once, without waiting for the SMS
    /// submissions it started.
    pub(crate) async fn tick_detached(&self) -> usize {
        dialtone::workers::tick(&self.state).await.expect("tick")
    }

    /// Another server process on the same database (a second node), sharing the clock.
    pub(crate) async fn second_node(&self) -> (String, AppState) {
        let mut config = self.config.clone();
        config.default_inventory = false;
        config.tls = None;
        let (base, _, state) = start(config, &self.clock).await;
        (base, state)
    }

    /// Records that a console live feed watches the account for a day, as a feed joining
    /// does: its events are recorded even when nobody receives them.
    pub(crate) async fn watch_feed(&self, account_sid: &str) {
        self.watch_feed_for(account_sid, 86_400_000).await;
    }

    /// Records that a console live feed watches the account for the next `ms` milliseconds.
    pub(crate) async fn watch_feed_for(&self, account_sid: &str, ms: i64) {
        let sid = dialtone_domain::Sid::parse(account_sid).expect("sid");
        let until = dialtone_domain::clock::Clock::now(&self.clock).plus_ms(ms);
        self.state
            .store
            .write(move |c| {
                let account = dialtone_store::accounts::by_sid(c, &sid)?.expect("account");
                dialtone_store::events::watch(c, account.id, until)
            })
            .await
            .expect("watch");
    }

    /// The account's events of one type, oldest first, as JSON.
    pub(crate) async fn events(&self, account_sid: &str, event_type: &str) -> Vec<Value> {
        let sid = dialtone_domain::Sid::parse(account_sid).expect("sid");
        let event_type = event_type.to_owned();
        self.state
            .store
            .read(move |c| {
                let account = dialtone_store::accounts::by_sid(c, &sid)?.expect("account");
                dialtone_store::events::list(c, account.id)
            })
            .await
            .expect("events")
            .into_iter()
            .filter(|e| e.event_type == event_type)
            .map(|e| serde_json::from_str(&e.data).expect("event data is JSON"))
            .collect()
    }

    pub(crate) fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// A request with no credentials.
    pub(crate) fn anon(&self, method: Method, path: &str) -> RequestBuilder {
        self.client.request(method, self.url(path))
    }

    /// A request with the account's x-api-key.
    pub(crate) fn req(&self, account: &TestAccount, method: Method, path: &str) -> RequestBuilder {
        self.anon(method, path)
            .header("x-api-key", &account.api_key)
    }

    /// An operator request.
    pub(crate) fn admin(&self, method: Method, path: &str) -> RequestBuilder {
        self.anon(method, path).bearer_auth(ADMIN_TOKEN)
    }

    /// Creates an account with `credit` cents through the operator API.
    pub(crate) async fn account_with(&self, body: Value) -> TestAccount {
        let (status, v) = send(self.admin(Method::POST, "/admin/accounts").json(&body)).await;
        assert_eq!(status, StatusCode::CREATED, "{v}");
        TestAccount {
            sid: v["sid"].as_str().expect("sid").to_owned(),
            api_key: v["apiKey"].as_str().expect("apiKey").to_owned(),
            login: v["login"].as_str().expect("login").to_owned(),
            password: v["password"].as_str().expect("password").to_owned(),
        }
    }

    /// A main account with 1000 EUR of credit.
    pub(crate) async fn account(&self) -> TestAccount {
        self.account_with(serde_json::json!({"name": "test", "credit": "100000.00"}))
            .await
    }

    /// A sub account of `parent`.
    pub(crate) async fn sub_account(&self, parent: &TestAccount, credit: &str) -> TestAccount {
        self.account_with(
            serde_json::json!({"name": "sub", "parent": parent.sid, "credit": credit}),
        )
        .await
    }
}

type Https = Option<(String, std::path::PathBuf)>;

async fn start(config: Config, clock: &ManualClock) -> (String, Https, AppState) {
    let app = Application::build(config, Arc::new(clock.clone()))
        .await
        .expect("build the application");
    let base = format!("http://{}", app.local_addr());
    let https = app
        .https()
        .map(|(addr, identity)| (format!("https://{addr}"), identity.cert_path.clone()));
    let state = app.state().clone();
    tokio::spawn(app.run_until(std::future::pending()));
    (base, https, state)
}

fn hex_id() -> String {
    use std::time::{SystemTime, UNIX_EPOCH};
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!("{:x}{:x}", nanos, std::process::id())
}

/// Waits (at most a minute) until a session of the test's PostgreSQL database waits for a
/// lock in a statement whose text matches `pattern` (SQL `LIKE`); whether one did. How a
/// test holding a row in a session of its own sees the server reach that row.
pub(crate) fn until_waiting_for_a_lock(c: &mut postgres::Client, pattern: &str) -> bool {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while std::time::Instant::now() < deadline {
        let n: i64 = c
            .query_one(
                "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' \
                 AND query LIKE $1",
                &[&pattern],
            )
            .expect("pg_stat_activity")
            .get(0);
        if n > 0 {
            return true;
        }
        std::thread::yield_now();
    }
    false
}

/// Sends and returns status and JSON body (Null when the body is empty or not JSON).
pub(crate) async fn send(req: RequestBuilder) -> (StatusCode, Value) {
    let resp = req.send().await.expect("request sent");
    let status = resp.status();
    let bytes = resp.bytes().await.expect("body");
    let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    (status, body)
}

/// Asserts an error answer of the contract's shape and returns its details' params.
pub(crate) fn assert_error(
    status: StatusCode,
    body: &Value,
    want_status: u16,
    want_code: &str,
) -> Vec<String> {
    assert_eq!(status.as_u16(), want_status, "{body}");
    assert_eq!(body["code"], want_code, "{body}");
    assert!(
        body["message"].as_str().is_some_and(|m| !m.is_empty()),
        "{body}"
    );
    body["details"]
        .as_array()
        .map(|d| {
            d.iter()
                .map(|x| x["param"].as_str().unwrap_or_default().to_owned())
                .collect()
        })
        .unwrap_or_default()
}
