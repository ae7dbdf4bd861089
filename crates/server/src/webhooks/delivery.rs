//! The delivery worker: claims due deliveries with a lease, POSTs the seed's envelope with
//! its headers and signature, records every try, and schedules retries (try n waits
//! n x 10 s after try n-1 failed; after try 10 the delivery is dead).

use std::time::Instant;

use dialtone_store::deliveries::{self, Attempt, Due, Next};
use tokio::sync::mpsc;

use super::recorded_try::RecordedTry;
use super::signing::sign;
use crate::state::AppState;

/// Last try; after it fails the delivery is dead.
pub(crate) const LAST_TRY: i64 = 10;
/// Most deliveries claimed per tick.
const BATCH: i64 = 1000;
/// A claimed delivery stays ours this long (longer than the receiver's timeout).
fn lease_ms(state: &AppState) -> i64 {
    i64::try_from(state.config.webhook_timeout_ms).unwrap_or(10_000) * 2 + 10_000
}

/// Most of a receiver's answer read: its status is what counts, and a receiver that
/// answers gigabytes must not make this server read them.
const MAX_ANSWER: usize = 4 * 1024;

/// The HTTP client deliveries use: no redirects, no proxy, the configured timeout, names
/// resolved through the outbound policy.
pub(crate) fn client(
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
pub(crate) fn envelope(d: &Due) -> String {
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

/// Claims the due deliveries this node has room for and starts a try of each, every try on
/// its own: recorded when it ends, by the recorder, never waited for here. Returns how many
/// were started (or skipped: a disabled subscription's).
pub(crate) async fn tick(state: &AppState) -> anyhow::Result<usize> {
    let room = state.deliveries.room();
    if room == 0 {
        return Ok(0);
    }
    let now = state.clock.now();
    let lease = lease_ms(state);
    let exclude = state.deliveries.exclusions();
    let limit = (room as i64).min(BATCH);
    let plan = state.deliveries.planner();
    let walk_after = state.deliveries.walk_after();
    let claimed = state
        .store
        .background()
        .write_repeatable(move |c| {
            // A run again after a rollback starts from the same plan.
            let mut plan = plan.clone();
            deliveries::claim(c, now, lease, limit, &exclude, walk_after, &mut |d| {
                plan.take(d)
            })
        })
        .await?;
    state.deliveries.walk_ended(claimed.walk_ended);
    let due = claimed.due;
    if due.is_empty() {
        return Ok(0);
    }
    state.deliveries.start(&due);
    let count = due.len();
    let recorder = recorder(state);
    for d in due {
        let (state, recorder) = (state.clone(), recorder.clone());
        tokio::spawn(async move {
            let (account, endpoint) = (d.account_id, d.endpoint.clone());
            let (attempt, ok, next) = if d.hook_status.as_deref() == Some("disabled") {
                let skipped = Attempt {
                    delivery_id: d.id,
                    try_number: d.try_number,
                    status_code: None,
                    duration_ms: 0,
                    error: None,
                };
                (skipped, None, Next::Skipped)
            } else {
                let (client, outbound, brand) = (
                    state.http.clone(),
                    state.outbound.clone(),
                    state.config.header_brand.clone(),
                );
                let (attempt, ok) = attempt(client, outbound, brand, d).await;
                let now = state.clock.now();
                let next = if ok {
                    Next::Delivered
                } else if attempt.try_number >= LAST_TRY {
                    Next::Dead
                } else {
                    Next::RetryAt(now.plus_ms((attempt.try_number + 1) * 10_000))
                };
                (attempt, Some(ok), next)
            };
            // Its account's and endpoint's place is free now: the next try may start.
            state.deliveries.done(account, &endpoint, ok);
            state.delivery_wake.notify_one();
            if recorder.send(RecordedTry { attempt, next }).is_err() {
                // No recorder: the lease brings the delivery back.
                state.deliveries.recorded(1);
            }
        });
    }
    Ok(count)
}

/// The channel to this node's recorder, started with the first try.
fn recorder(state: &AppState) -> mpsc::UnboundedSender<RecordedTry> {
    state
        .delivery_recorder
        .get_or_init(|| {
            let (tx, rx) = mpsc::unbounded_channel();
            tokio::spawn(record_loop(state.clone(), rx));
            tx
        })
        .clone()
}

/// Records the tries as they end, every try that ended meanwhile in one write.
async fn record_loop(state: AppState, mut rx: mpsc::UnboundedReceiver<RecordedTry>) {
    while let Some(first) = rx.recv().await {
        let mut batch = vec![first];
        while let Ok(more) = rx.try_recv() {
            batch.push(more);
        }
        let now = state.clock.now();
        let rows: Vec<(Attempt, Next)> =
            batch.iter().map(|r| (r.attempt.clone(), r.next)).collect();
        let written = state
            .store
            .background()
            .write_repeatable(move |c| deliveries::record_many(c, &rows, now))
            .await;
        if let Err(e) = written {
            // The leases bring these deliveries back; their tries were made.
            tracing::error!(error = %format!("{e:#}"), "webhook tries could not be recorded");
        }
        state.deliveries.recorded(batch.len());
    }
}
