//! The delivery worker: claims due deliveries with a lease, POSTs the seed's envelope with
//! its headers and signature, records every try, and schedules retries (try n waits
//! n x 10 s after try n-1 failed; after try 10 the delivery is dead).

use std::sync::Arc;
use std::time::Instant;

use dialtone_store::deliveries::{self, Attempt, Due, Next};
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use super::signing::sign;
use crate::state::AppState;

/// Last try; after it fails the delivery is dead.
pub const LAST_TRY: i64 = 10;
/// Most deliveries claimed per tick.
const BATCH: i64 = 1000;
/// Requests in flight at once.
const IN_FLIGHT: usize = 256;
/// A claimed delivery stays ours this long (longer than the receiver's timeout).
fn lease_ms(state: &AppState) -> i64 {
    i64::try_from(state.config.webhook_timeout_ms).unwrap_or(10_000) * 2 + 10_000
}

/// The HTTP client deliveries use: no redirects, the configured timeout.
pub fn client(timeout_ms: u64) -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(std::time::Duration::from_millis(timeout_ms))
        .redirect(reqwest::redirect::Policy::none())
        .user_agent(concat!("dialtone-webhooks/", env!("CARGO_PKG_VERSION")))
        .pool_max_idle_per_host(64)
        .build()
        .unwrap_or_default()
}

/// The envelope: `{event_at, event_id, hook_hash, try, type, data}` with `data` as stored.
pub fn envelope(d: &Due) -> String {
    let s = |v: &str| serde_json::to_string(v).unwrap_or_else(|_| "\"\"".into());
    let hook = d
        .hook_sid
        .as_deref()
        .map_or_else(|| "null".to_owned(), |h| s(&h.to_ascii_uppercase()));
    format!(
        r#"{{"event_at":{},"event_id":{},"hook_hash":{},"try":{},"type":{},"data":{}}}"#,
        s(&d.event_at.to_rfc3339()),
        s(&d.event_id),
        hook,
        d.try_number,
        s(&d.event_type),
        d.data
    )
}

async fn attempt(client: reqwest::Client, brand: String, d: Due) -> (Attempt, bool) {
    let body = envelope(&d);
    let mut req = client
        .post(&d.endpoint)
        .header("content-type", "application/json")
        .header(format!("X-{brand}-EventId"), &d.event_id);
    if let Some(secret) = &d.secret {
        req = req.header(
            format!("X-{brand}-HmacSignature"),
            sign(&d.algo, secret, body.as_bytes()),
        );
    }
    let started = Instant::now();
    let outcome = req.body(body).send().await;
    let duration_ms = i64::try_from(started.elapsed().as_millis()).unwrap_or(i64::MAX);
    let (status_code, error, ok) = match outcome {
        Ok(resp) => {
            let code = resp.status().as_u16();
            let ok = (200..300).contains(&code);
            // Drain the body so the connection can be reused.
            let _ = resp.bytes().await;
            (
                Some(i64::from(code)),
                (!ok).then(|| format!("HTTP {code}")),
                ok,
            )
        }
        Err(e) if e.is_timeout() => (None, Some("no answer within the timeout".to_owned()), false),
        Err(e) => (None, Some(format!("connection error: {e}")), false),
    };
    let attempt = Attempt {
        delivery_id: d.id,
        try_number: d.try_number,
        status_code,
        duration_ms,
        error,
    };
    (attempt, ok)
}

/// Tries every due delivery once; returns how many were handled.
pub async fn tick(state: &AppState) -> anyhow::Result<usize> {
    let now = state.clock.now();
    let lease = lease_ms(state);
    let due = state
        .store
        .write_repeatable(move |c| deliveries::claim(c, now, lease, BATCH))
        .await?;
    if due.is_empty() {
        return Ok(0);
    }
    let count = due.len();
    let limit = Arc::new(Semaphore::new(IN_FLIGHT));
    let mut tasks = JoinSet::new();
    let mut skipped = Vec::new();
    for d in due {
        if d.hook_status.as_deref() == Some("disabled") {
            skipped.push(Attempt {
                delivery_id: d.id,
                try_number: d.try_number,
                status_code: None,
                duration_ms: 0,
                error: None,
            });
            continue;
        }
        let (client, brand, limit) = (
            state.http.clone(),
            state.config.header_brand.clone(),
            limit.clone(),
        );
        tasks.spawn(async move {
            let _permit = limit.acquire_owned().await;
            attempt(client, brand, d).await
        });
    }
    let mut results = Vec::with_capacity(count);
    while let Some(done) = tasks.join_next().await {
        if let Ok(r) = done {
            results.push(r);
        }
    }
    let now = state.clock.now();
    state
        .store
        .write_repeatable(move |c| {
            for (a, ok) in &results {
                let next = if *ok {
                    Next::Delivered
                } else if a.try_number >= LAST_TRY {
                    Next::Dead
                } else {
                    Next::RetryAt(now.plus_ms((a.try_number + 1) * 10_000))
                };
                deliveries::record(c, a, next, now)?;
            }
            for a in &skipped {
                deliveries::record(c, a, Next::Skipped, now)?;
            }
            Ok::<_, dialtone_store::DbError>(())
        })
        .await?;
    Ok(count)
}
