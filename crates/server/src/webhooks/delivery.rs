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

/// Most of a receiver's answer read: its status is what counts, and a receiver that
/// answers gigabytes must not make this server read them.
const MAX_ANSWER: usize = 4 * 1024;

/// The HTTP client deliveries use: no redirects, no proxy, the configured timeout, names
/// resolved through the outbound policy.
pub fn client(
    timeout_ms: u64,
    outbound: &std::sync::Arc<crate::outbound::Outbound>,
) -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(std::time::Duration::from_millis(timeout_ms))
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .dns_resolver(outbound.resolver())
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

async fn attempt(
    client: reqwest::Client,
    outbound: std::sync::Arc<crate::outbound::Outbound>,
    brand: String,
    d: Due,
) -> (Attempt, bool) {
    let body = envelope(&d);
    let allowed = url::Url::parse(&d.endpoint)
        .map_err(|e| e.to_string())
        .and_then(|u| outbound.check_url(&u));
    if let Err(why) = allowed {
        let attempt = Attempt {
            delivery_id: d.id,
            try_number: d.try_number,
            status_code: None,
            duration_ms: 0,
            error: Some(why),
        };
        return (attempt, false);
    }
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
        Ok(mut resp) => {
            let code = resp.status().as_u16();
            let ok = (200..300).contains(&code);
            // Read a little of the answer (a short one lets the connection be reused), then
            // drop the rest with the connection.
            let mut read = 0;
            while read <= MAX_ANSWER {
                match resp.chunk().await {
                    Ok(Some(chunk)) => read += chunk.len(),
                    _ => break,
                }
            }
            (
                Some(i64::from(code)),
                (!ok).then(|| format!("HTTP {code}")),
                ok,
            )
        }
        Err(e) if e.is_timeout() => (None, Some("no answer within the timeout".to_owned()), false),
        Err(e) => (
            None,
            Some(format!(
                "connection error: {}",
                crate::scenarios::fetch::error_chain(&e)
            )),
            false,
        ),
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
        let (client, outbound, brand, limit) = (
            state.http.clone(),
            state.outbound.clone(),
            state.config.header_brand.clone(),
            limit.clone(),
        );
        tasks.spawn(async move {
            let _permit = limit.acquire_owned().await;
            attempt(client, outbound, brand, d).await
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
