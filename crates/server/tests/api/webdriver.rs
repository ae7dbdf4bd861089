//! A headless Chromium driven through WebDriver (`chromedriver` from Debian's
//! `chromium-driver`), for the console's tests: the few commands they need (open a page,
//! find elements, read text, click, type, run a script, take a screenshot) over the W3C
//! protocol's JSON, with every wait bounded.

use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::process::{Child, Command};

/// A browser session.
pub(crate) struct Browser {
    http: reqwest::Client,
    base: String,
    _driver: Child,
}

const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

/// Whether chromedriver and chromium are installed (a missing one fails under
/// `DIALTONE_REQUIRE_PEERS`).
pub(crate) fn available() -> bool {
    let ok =
        crate::voice_peers::installed("chromedriver") && crate::voice_peers::installed("chromium");
    if !ok {
        crate::helpers::skip("chromium and chromium-driver (.ci/run installs them)");
    }
    ok
}

impl Browser {
    /// Starts chromedriver on a free port and a headless browser in it.
    pub(crate) async fn start() -> Self {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("free port")
            .port();
        let driver = Command::new("chromedriver")
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("chromedriver starts");
        let http = reqwest::Client::new();
        let root = format!("http://127.0.0.1:{port}");
        let mut ready = false;
        for _ in 0..100 {
            if http.get(format!("{root}/status")).send().await.is_ok() {
                ready = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert!(ready, "chromedriver answers within 10 s");
        let caps = json!({"capabilities": {"alwaysMatch": {"goog:chromeOptions": {
            "binary": "/usr/bin/chromium",
            "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1280,900"]
        }}}});
        let made: Value = http
            .post(format!("{root}/session"))
            .json(&caps)
            .send()
            .await
            .expect("session")
            .json()
            .await
            .expect("session json");
        let id = made["value"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no session: {made}"))
            .to_owned();
        Self {
            http,
            base: format!("{root}/session/{id}"),
            _driver: driver,
        }
    }

    async fn call(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Value {
        let mut req = self.http.request(method, format!("{}{path}", self.base));
        if let Some(b) = body {
            req = req.json(&b);
        }
        let v: Value = req
            .send()
            .await
            .expect("webdriver")
            .json()
            .await
            .expect("json");
        v["value"].clone()
    }

    /// Actions on the element `css` finds, in turn. An element the page drew again between
    /// the finding and an action (a stale element) is found again, at most 3 times; any other
    /// error of the driver (an element that cannot be interacted with) fails the test rather
    /// than going on as if the action had happened.
    async fn act(&self, css: &str, actions: &[(&str, Value)]) {
        for attempt in 1..=3 {
            let id = self.find(css).await;
            let mut stale = false;
            for (action, body) in actions {
                let path = format!("/element/{id}/{action}");
                let v = self
                    .call(reqwest::Method::POST, &path, Some(body.clone()))
                    .await;
                if let Some(error) = v.get("error") {
                    if error == "stale element reference" && attempt < 3 {
                        stale = true;
                        break;
                    }
                    panic!("WebDriver {action} on {css}: {error}: {}", v["message"]);
                }
            }
            if !stale {
                return;
            }
        }
    }

    /// Opens a URL.
    pub(crate) async fn open(&self, url: &str) {
        self.call(reqwest::Method::POST, "/url", Some(json!({ "url": url })))
            .await;
    }

    /// Runs a script in the page and returns its value.
    pub(crate) async fn script(&self, code: &str, args: Value) -> Value {
        self.call(
            reqwest::Method::POST,
            "/execute/sync",
            Some(json!({"script": code, "args": args})),
        )
        .await
    }

    /// The element a CSS selector finds, waiting for it at most 10 s.
    pub(crate) async fn find(&self, css: &str) -> String {
        let mut last = Value::Null;
        for _ in 0..100 {
            let v = self
                .call(
                    reqwest::Method::POST,
                    "/element",
                    Some(json!({"using": "css selector", "value": css})),
                )
                .await;
            if let Some(id) = v[ELEMENT].as_str() {
                return id.to_owned();
            }
            last = v;
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let page = self.text("body").await;
        panic!("no element {css} within 10 s ({last}); the page says: {page}");
    }

    /// The text of the first element a selector finds (waiting for it).
    pub(crate) async fn text(&self, css: &str) -> String {
        let v = self
            .script(
                "const e = document.querySelector(arguments[0]); return e ? e.innerText : null;",
                json!([css]),
            )
            .await;
        v.as_str().unwrap_or_default().to_owned()
    }

    /// Waits (at most 10 s) until the text of `css` contains `needle`; returns that text.
    pub(crate) async fn wait_text(&self, css: &str, needle: &str) -> String {
        let mut last = String::new();
        for _ in 0..100 {
            last = self.text(css).await;
            if last.contains(needle) {
                return last;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("{css} never said {needle:?} within 10 s; it says: {last}");
    }

    /// Clicks an element.
    pub(crate) async fn click(&self, css: &str) {
        self.act(css, &[("click", json!({}))]).await;
    }

    /// Types into an element (after clearing it).
    pub(crate) async fn type_in(&self, css: &str, text: &str) {
        self.act(
            css,
            &[("clear", json!({})), ("value", json!({ "text": text }))],
        )
        .await;
    }

    /// Focuses an element and sends it keys, as a user tabbing to it and typing would.
    pub(crate) async fn press(&self, css: &str, keys: &str) {
        self.act(css, &[("value", json!({ "text": keys }))]).await;
    }

    /// A PNG of the page, written to `DIALTONE_SCREENSHOTS/name.png` when that is set.
    pub(crate) async fn screenshot(&self, name: &str) {
        let Some(dir) = std::env::var_os("DIALTONE_SCREENSHOTS") else {
            return;
        };
        let v = self.call(reqwest::Method::GET, "/screenshot", None).await;
        let png = base64::Engine::decode(
            &base64::engine::general_purpose::STANDARD,
            v.as_str().unwrap_or_default(),
        )
        .expect("png");
        std::fs::write(std::path::Path::new(&dir).join(format!("{name}.png")), png)
            .expect("screenshot written");
    }
}

impl Browser {
    /// Ends the session: the browser exits (the driver is killed when dropped).
    pub(crate) async fn quit(self) {
        let _ = self.http.delete(&self.base).send().await;
    }
}
