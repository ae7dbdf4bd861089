//! A webhook receiver as a customer would run one: a real HTTP server that records what it
//! gets, answers as told, and checks signatures with its own HMAC code.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use base64::Engine;
use hmac::{Hmac, Mac};
use serde_json::Value;
use sha2::Sha256;

/// How the receiver answers a request.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Reply {
    /// With this status.
    Status(u16),
    /// Never (holds the request open).
    Hang,
}

/// One request received.
#[derive(Debug, Clone)]
pub(crate) struct Received {
    /// The path posted to (`/hook`, or below it).
    pub path: String,
    pub headers: HeaderMap,
    pub raw: Bytes,
    pub json: Value,
}

#[derive(Default)]
struct Inner {
    script: VecDeque<Reply>,
    otherwise: Option<Reply>,
    got: Vec<Received>,
}

/// A running receiver.
#[derive(Clone)]
pub(crate) struct Receiver {
    pub url: String,
    inner: Arc<Mutex<Inner>>,
}

async fn handle(
    State(inner): State<Arc<Mutex<Inner>>>,
    uri: axum::http::Uri,
    headers: HeaderMap,
    raw: Bytes,
) -> StatusCode {
    let reply = {
        let mut i = inner.lock().unwrap();
        let json = serde_json::from_slice(&raw).unwrap_or(Value::Null);
        let path = uri.path().to_owned();
        i.got.push(Received {
            path,
            headers,
            raw,
            json,
        });
        i.script
            .pop_front()
            .or(i.otherwise)
            .unwrap_or(Reply::Status(200))
    };
    match reply {
        Reply::Status(code) => StatusCode::from_u16(code).unwrap(),
        Reply::Hang => std::future::pending().await,
    }
}

impl Receiver {
    /// Starts a receiver answering 200 to everything posted to `/hook` or below it.
    pub(crate) async fn start() -> Self {
        let inner = Arc::new(Mutex::new(Inner::default()));
        let app = Router::new()
            .route("/hook", post(handle))
            .route("/hook/{*rest}", post(handle))
            .with_state(inner.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/hook", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        Self { url, inner }
    }

    /// The next answers, in order; then `otherwise` (or 200).
    pub(crate) fn script(&self, replies: &[Reply], otherwise: Option<Reply>) {
        let mut i = self.inner.lock().unwrap();
        i.script = replies.iter().copied().collect();
        i.otherwise = otherwise;
    }

    /// Everything received so far.
    pub(crate) fn received(&self) -> Vec<Received> {
        self.inner.lock().unwrap().got.clone()
    }
}

/// Checks a signature as the seed tells customers to: base64(HMAC-SHA256(secret, body)).
pub(crate) fn signature_ok(r: &Received, brand: &str, secret: &str) -> bool {
    let Some(sig) = r
        .headers
        .get(format!("x-{}-hmacsignature", brand.to_lowercase()))
    else {
        return false;
    };
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(&r.raw);
    let expected = base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes());
    sig.to_str().unwrap() == expected
}
