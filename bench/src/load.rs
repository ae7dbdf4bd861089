//! A lean HTTP/1.1 load generator: N keep-alive connections, each sending the next request
//! as soon as the previous answer arrived, recording every latency.

use std::time::{Duration, Instant};

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::client::conn::http1;
use hyper_util::rt::TokioIo;
use serde_json::Value;
use tokio::net::TcpStream;

/// A request to repeat.
#[derive(Clone)]
pub(crate) struct Req {
    method: &'static str,
    path: String,
    body: Option<&'static str>,
}

impl Req {
    /// A GET.
    pub(crate) fn get(path: &'static str) -> Self {
        Self {
            method: "GET",
            path: path.to_owned(),
            body: None,
        }
    }

    /// A GET of a computed path.
    pub(crate) fn get_owned(path: String) -> Self {
        Self {
            method: "GET",
            path,
            body: None,
        }
    }

    /// A POST of a computed path with a JSON body.
    pub(crate) fn post_owned(path: String, body: &'static str) -> Self {
        Self {
            method: "POST",
            path,
            body: Some(body),
        }
    }

    /// A POST with a JSON body.
    pub(crate) fn post(path: &'static str, body: &'static str) -> Self {
        Self {
            method: "POST",
            path: path.to_owned(),
            body: Some(body),
        }
    }
}

/// What a run measured.
pub(crate) struct Report {
    latencies_us: Vec<u32>,
    elapsed: Duration,
    /// Answers outside 200..299.
    pub non_2xx: u64,
}

impl Report {
    /// Requests per second (2xx and others).
    pub(crate) fn rate(&self) -> f64 {
        self.latencies_us.len() as f64 / self.elapsed.as_secs_f64()
    }

    fn percentile(&self, p: f64) -> f64 {
        if self.latencies_us.is_empty() {
            return 0.0;
        }
        let i = ((self.latencies_us.len() as f64 - 1.0) * p).round() as usize;
        f64::from(self.latencies_us[i]) / 1000.0
    }

    /// Requests answered.
    pub(crate) fn count(&self) -> u64 {
        self.latencies_us.len() as u64
    }

    /// One line: rate and latency percentiles.
    pub(crate) fn summary(&self) -> String {
        format!(
            "{:.0} req/s, p50 {:.2} ms, p99 {:.2} ms, p99.9 {:.2} ms ({} requests in {:.1} s)",
            self.rate(),
            self.percentile(0.50),
            self.percentile(0.99),
            self.percentile(0.999),
            self.latencies_us.len(),
            self.elapsed.as_secs_f64()
        )
    }
}

fn host(base: &str) -> String {
    base.trim_start_matches("http://").to_owned()
}

fn request(
    base: &str,
    method: &str,
    path: &str,
    auth: (&str, &str),
    body: Option<&str>,
) -> anyhow::Result<hyper::Request<Full<Bytes>>> {
    Ok(hyper::Request::builder()
        .method(method)
        .uri(path)
        .header("host", host(base))
        .header(auth.0, auth.1)
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body.unwrap_or_default().to_owned())))?)
}

/// Runs `make()` requests on `connections` connections for `duration`.
pub(crate) async fn run(
    base: &str,
    key: &str,
    connections: usize,
    duration: Duration,
    make: impl Fn() -> Req + Send + Sync + Clone + 'static,
) -> anyhow::Result<Report> {
    let started = Instant::now();
    let deadline = started + duration;
    let mut tasks = Vec::new();
    for _ in 0..connections {
        let (base, key, make) = (base.to_owned(), key.to_owned(), make.clone());
        tasks.push(tokio::spawn(async move {
            let stream = TcpStream::connect(host(&base)).await?;
            stream.set_nodelay(true)?;
            let (mut sender, conn) = http1::handshake(TokioIo::new(stream)).await?;
            tokio::spawn(conn);
            let mut lat = Vec::with_capacity(200_000);
            let mut bad = 0u64;
            while Instant::now() < deadline {
                let r = make();
                let req = request(&base, r.method, &r.path, ("x-api-key", &key), r.body)?;
                let t = Instant::now();
                let resp = sender.send_request(req).await?;
                let status = resp.status().as_u16();
                resp.into_body().collect().await?;
                lat.push(u32::try_from(t.elapsed().as_micros()).unwrap_or(u32::MAX));
                if !(200..300).contains(&status) {
                    bad += 1;
                }
            }
            Ok::<_, anyhow::Error>((lat, bad))
        }));
    }
    let mut all = Vec::new();
    let mut non_2xx = 0;
    for t in tasks {
        let (lat, bad) = t.await??;
        all.extend(lat);
        non_2xx += bad;
    }
    let elapsed = started.elapsed();
    all.sort_unstable();
    Ok(Report {
        latencies_us: all,
        elapsed,
        non_2xx,
    })
}

/// One request with an `authorization` header; returns status and JSON body.
pub(crate) async fn once(
    base: &str,
    method: &str,
    path: &str,
    auth: Option<&str>,
    body: Option<&str>,
) -> anyhow::Result<(u16, Value)> {
    send_one(
        base,
        method,
        path,
        ("authorization", auth.unwrap_or("")),
        body,
    )
    .await
}

/// One request with an API key.
pub(crate) async fn once_key(
    base: &str,
    method: &str,
    path: &str,
    key: &str,
    body: Option<&str>,
) -> anyhow::Result<(u16, Value)> {
    send_one(base, method, path, ("x-api-key", key), body).await
}

async fn send_one(
    base: &str,
    method: &str,
    path: &str,
    auth: (&str, &str),
    body: Option<&str>,
) -> anyhow::Result<(u16, Value)> {
    let stream = TcpStream::connect(host(base)).await?;
    let (mut sender, conn) = http1::handshake(TokioIo::new(stream)).await?;
    tokio::spawn(conn);
    let resp = sender
        .send_request(request(base, method, path, auth, body)?)
        .await?;
    let status = resp.status().as_u16();
    let bytes = resp.into_body().collect().await?.to_bytes();
    Ok((
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    ))
}

/// One request with an API key (empty: none) and a body of `content_type`; returns the
/// status and the body's bytes (WAV, metrics text).
pub(crate) async fn raw(
    base: &str,
    method: &str,
    path: &str,
    key: &str,
    body: Option<(&str, Vec<u8>)>,
) -> anyhow::Result<(u16, Vec<u8>)> {
    let stream = TcpStream::connect(host(base)).await?;
    let (mut sender, conn) = http1::handshake(TokioIo::new(stream)).await?;
    tokio::spawn(conn);
    let (content_type, bytes) = body.unwrap_or(("application/json", Vec::new()));
    let mut request = hyper::Request::builder()
        .method(method)
        .uri(path)
        .header("host", host(base))
        .header("content-type", content_type);
    if !key.is_empty() {
        request = request.header("x-api-key", key);
    }
    let resp = sender
        .send_request(request.body(Full::new(Bytes::from(bytes)))?)
        .await?;
    let status = resp.status().as_u16();
    Ok((
        status,
        resp.into_body().collect().await?.to_bytes().to_vec(),
    ))
}

/// Uploads `bytes` as a WAV file named `name` (multipart `name` and `file` parts) with an
/// API key; returns status and JSON body.
pub(crate) async fn upload(
    base: &str,
    key: &str,
    path: &str,
    name: &str,
    bytes: &[u8],
) -> anyhow::Result<(u16, Value)> {
    const BOUNDARY: &str = "dialtone-bench-boundary";
    let mut body = Vec::with_capacity(bytes.len() + 512);
    body.extend_from_slice(
        format!("--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"name\"\r\n\r\n{name}\r\n")
            .as_bytes(),
    );
    body.extend_from_slice(
        format!("--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{name}.wav\"\r\nContent-Type: audio/wav\r\n\r\n")
            .as_bytes(),
    );
    body.extend_from_slice(bytes);
    body.extend_from_slice(format!("\r\n--{BOUNDARY}--\r\n").as_bytes());
    let stream = TcpStream::connect(host(base)).await?;
    let (mut sender, conn) = http1::handshake(TokioIo::new(stream)).await?;
    tokio::spawn(conn);
    let request = hyper::Request::builder()
        .method("POST")
        .uri(path)
        .header("host", host(base))
        .header("x-api-key", key)
        .header(
            "content-type",
            format!("multipart/form-data; boundary={BOUNDARY}"),
        )
        .body(Full::new(Bytes::from(body)))?;
    let resp = sender.send_request(request).await?;
    let status = resp.status().as_u16();
    let bytes = resp.into_body().collect().await?.to_bytes();
    Ok((
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    ))
}

/// Streams a GET of `path` without credentials (a signed URL), counting bytes and newlines
/// as they arrive; returns (status, bytes, lines).
pub(crate) async fn stream_get(base: &str, path: &str) -> anyhow::Result<(u16, u64, u64)> {
    let stream = TcpStream::connect(host(base)).await?;
    let (mut sender, conn) = http1::handshake(TokioIo::new(stream)).await?;
    tokio::spawn(conn);
    let resp = sender
        .send_request(request(base, "GET", path, ("x-none", ""), None)?)
        .await?;
    let status = resp.status().as_u16();
    let mut body = resp.into_body();
    let (mut bytes, mut lines) = (0u64, 0u64);
    while let Some(frame) = body.frame().await {
        if let Ok(data) = frame?.into_data() {
            bytes += data.len() as u64;
            lines += data.iter().filter(|b| **b == b'\n').count() as u64;
        }
    }
    Ok((status, bytes, lines))
}
