//! A webhook receiver for the benchmark: checks every signature and the delay from the
//! event to its arrival.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine;
use hmac::{Hmac, Mac};
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use sha2::Sha256;
use tokio::net::TcpListener;

struct Counts {
    got: AtomicU64,
    bad: AtomicU64,
    delays_ms: Mutex<Vec<f64>>,
    /// (event_id, try) of every delivery.
    seen: Mutex<Vec<(String, i64)>>,
}

/// A running receiver.
pub(crate) struct Receiver {
    /// Where to subscribe.
    pub url: String,
    counts: Arc<Counts>,
}

fn now_ms() -> i64 {
    dialtone_domain::Timestamp::now_system().millis()
}

impl Receiver {
    /// Starts on a free loopback port, checking signatures made with `secret`.
    pub(crate) async fn start(secret: &'static str) -> anyhow::Result<Self> {
        let listener = TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0))).await?;
        let url = format!("http://{}/hook", listener.local_addr()?);
        let counts = Arc::new(Counts {
            got: AtomicU64::new(0),
            bad: AtomicU64::new(0),
            delays_ms: Mutex::new(Vec::new()),
            seen: Mutex::new(Vec::new()),
        });
        let c = counts.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let c = c.clone();
                tokio::spawn(async move {
                    let service = service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                        let c = c.clone();
                        async move {
                            let sig = req
                                .headers()
                                .get("x-svc-hmacsignature")
                                .and_then(|v| v.to_str().ok())
                                .map(str::to_owned);
                            let body = req.into_body().collect().await?.to_bytes();
                            let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(secret.as_bytes())
                                .expect("any key length");
                            mac.update(&body);
                            let expected = base64::engine::general_purpose::STANDARD
                                .encode(mac.finalize().into_bytes());
                            if sig.as_deref() != Some(expected.as_str()) {
                                c.bad.fetch_add(1, Ordering::Relaxed);
                            }
                            if let Ok(v) = serde_json::from_slice::<serde_json::Value>(&body) {
                                if let Ok(mut seen) = c.seen.lock() {
                                    seen.push((
                                        v["event_id"].as_str().unwrap_or_default().to_owned(),
                                        v["try"].as_i64().unwrap_or(-1),
                                    ));
                                }
                                if let Some(at) = v["event_at"]
                                    .as_str()
                                    .and_then(|s| dialtone_domain::Timestamp::parse_rfc3339(s).ok())
                                    && let Ok(mut d) = c.delays_ms.lock()
                                {
                                    d.push((now_ms() - at.millis()) as f64);
                                }
                            }
                            c.got.fetch_add(1, Ordering::Relaxed);
                            Ok::<_, hyper::Error>(hyper::Response::new(Full::new(
                                Bytes::from_static(b"ok"),
                            )))
                        }
                    });
                    let _ = http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        Ok(Self { url, counts })
    }

    /// Waits until `n` deliveries arrived.
    pub(crate) async fn wait_for(&self, n: u64, limit: Duration) -> anyhow::Result<()> {
        let started = std::time::Instant::now();
        while self.counts.got.load(Ordering::Relaxed) < n {
            anyhow::ensure!(
                started.elapsed() < limit,
                "only {} of {n} deliveries arrived",
                self.counts.got.load(Ordering::Relaxed)
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        Ok(())
    }

    /// (event_id, try) of every delivery received so far.
    pub(crate) fn seen(&self) -> Vec<(String, i64)> {
        self.counts
            .seen
            .lock()
            .map(|s| s.clone())
            .unwrap_or_default()
    }

    /// Deliveries whose signature did not verify.
    pub(crate) fn bad_signatures(&self) -> u64 {
        self.counts.bad.load(Ordering::Relaxed)
    }

    /// Deliveries received so far.
    pub(crate) fn received(&self) -> u64 {
        self.counts.got.load(Ordering::Relaxed)
    }

    /// The delay from event to arrival of the last delivery received, in ms.
    pub(crate) fn last_delay(&self) -> f64 {
        self.counts
            .delays_ms
            .lock()
            .ok()
            .and_then(|d| d.last().copied())
            .unwrap_or(0.0)
    }
}
