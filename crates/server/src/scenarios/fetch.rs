//! `fetch@v1` / `fetch@v2`: real HTTP requests from a scenario, bounded: http and https only,
//! no redirects, a timeout, and a cap on the response read.

use std::time::Duration;

use serde_json::{Value, json};

use crate::state::AppState;

/// Largest response body read (bytes).
pub(crate) const MAX_RESPONSE: usize = 1024 * 1024;
/// Longest timeout a scenario may ask for.
const MAX_TIMEOUT_MS: u64 = 30_000;

/// The client of scenario fetches: no redirects (a redirect is answered to the scenario as
/// is), no proxy, names resolved through the outbound policy, rustls, no cookies.
pub(crate) fn client(
    outbound: &std::sync::Arc<crate::outbound::Outbound>,
) -> anyhow::Result<reqwest::Client> {
    Ok(reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .dns_resolver(outbound.resolver())
        .user_agent(concat!("dialtone-actions/", env!("CARGO_PKG_VERSION")))
        .build()?)
}

/// An error with its causes (the resolver's refusal is a cause of reqwest's connect error).
pub(crate) fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        let more = c.to_string();
        if !text.contains(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        cause = c.source();
    }
    text
}

fn failure(message: impl std::fmt::Display) -> Value {
    json!({"ok": false, "status": 0, "statusText": message.to_string(), "headers": {}, "body": "", "json": null})
}

/// Performs the request; the value is `{ok, status, statusText, headers, body, json}`.
pub(crate) async fn fetch(
    state: &AppState,
    url: &str,
    method: &str,
    headers: &[(String, String)],
    body: Option<String>,
    timeout_ms: u64,
) -> Value {
    let Ok(parsed) = url::Url::parse(url) else {
        return failure(format!("invalid URL {url:?}"));
    };
    if let Err(why) = state.outbound.check_url(&parsed) {
        return failure(why);
    }
    let Ok(method) = reqwest::Method::from_bytes(method.to_ascii_uppercase().as_bytes()) else {
        return failure(format!("invalid method {method:?}"));
    };
    let timeout = Duration::from_millis(timeout_ms.clamp(1, MAX_TIMEOUT_MS));
    let mut request = state.fetch_http.request(method, parsed).timeout(timeout);
    for (name, value) in headers {
        request = request.header(name, value);
    }
    if let Some(body) = body {
        request = request.body(body);
    }
    let mut response = match request.send().await {
        Ok(r) => r,
        Err(e) => return failure(error_chain(&e)),
    };
    let status = response.status();
    let mut header_map = serde_json::Map::new();
    for (name, value) in response.headers() {
        if let Ok(v) = value.to_str() {
            header_map.insert(name.as_str().to_owned(), Value::String(v.to_owned()));
        }
    }
    let mut bytes = Vec::new();
    loop {
        match response.chunk().await {
            Ok(Some(chunk)) => {
                if bytes.len() + chunk.len() > MAX_RESPONSE {
                    return failure(format!("the response is larger than {MAX_RESPONSE} bytes"));
                }
                bytes.extend_from_slice(&chunk);
            }
            Ok(None) => break,
            Err(e) => return failure(e),
        }
    }
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let parsed_json = serde_json::from_str::<Value>(&text).unwrap_or(Value::Null);
    json!({
        "ok": status.is_success(),
        "status": status.as_u16(),
        "statusText": status.canonical_reason().unwrap_or(""),
        "headers": header_map,
        "body": text,
        "json": parsed_json,
    })
}
