//! `/admin/smpp`: the operator's SMPP connectors and what waits on them.
//!
//! - `GET /admin/smpp`: each connector with its bind state (passwords never shown): per
//!   bind, up or down, the last error, since when, the next attempt; the parts queued in
//!   it, the throttling the SMSC imposes, the receipts it sent that matched no SMS, and the
//!   SMS routed to it that it has not taken yet.
//! - `POST /admin/smpp`: adds one (the `[[smpp]]` fields of the TOML file, as JSON; stored,
//!   started and routed at once).
//! - `DELETE /admin/smpp/{name}[?waiting=keep|fail]`: unbinds and forgets one added here
//!   (those of the file change with the file). Its SMS not yet taken stay waiting (`keep`,
//!   the default) until a connector routes them, or end now (`fail`).
//! - `GET /admin/smpp/waiting`: SMS not yet taken, by the network they are routed to, and
//!   whether that network runs. `POST /admin/smpp/waiting/fail {network}` ends those of a
//!   network that does not run.
//! - `GET /admin/smpp/receipts[?connector=&limit=]`: receipts kept unmatched, newest first.

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, RawQuery, State};
use axum::http::StatusCode;
use dialtone_carrier::smpp::{BindHealth, Smpp, SmppConfig};
use dialtone_domain::Timestamp;
use dialtone_domain::sms::SmsStatus;
use dialtone_store::{smpp_receipts, sms as store, sms_parts};
use serde::{Deserialize, Serialize};

use crate::error::{AppError, AppResult};
use crate::http::extract;
use crate::networks::Source;
use crate::sms::moves::{Moves, apply, refuse};
use crate::state::AppState;

/// A bind's state, times as RFC 3339.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct BindView {
    kind: &'static str,
    bound: bool,
    since: Option<String>,
    last_error: Option<String>,
    last_error_at: Option<String>,
    next_attempt_at: Option<String>,
    failures: u32,
}

fn rfc3339(ms: Option<i64>) -> Option<String> {
    ms.map(|ms| Timestamp::from_millis(ms).to_rfc3339())
}

impl From<BindHealth> for BindView {
    fn from(h: BindHealth) -> Self {
        Self {
            kind: h.kind,
            bound: h.bound,
            since: rfc3339(h.since),
            last_error: h.last_error,
            last_error_at: rfc3339(h.last_error_at),
            next_attempt_at: rfc3339(h.next_attempt_at),
            failures: h.failures,
        }
    }
}

/// A connector as the operator sees it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ConnectorView {
    /// Its configuration, password removed.
    #[serde(flatten)]
    config: serde_json::Value,
    /// `file` or `admin`.
    source: &'static str,
    /// Submits can leave now.
    bound: bool,
    /// Deliveries can arrive now.
    receiving: bool,
    /// Each bind: up or down, and why.
    binds: Vec<BindView>,
    /// Parts waiting in the connector (for the window, a slot or an answer).
    queued: usize,
    /// Milliseconds the SMSC's throttling adds between two submits (0: none).
    throttle_ms: u128,
    /// Receipts it sent that matched no SMS (`GET /admin/smpp/receipts`).
    unmatched_receipts: i64,
    /// SMS routed to it that it has not taken yet.
    waiting: i64,
}

fn view(smpp: &Smpp, source: Source, unmatched: i64, waiting: i64) -> ConnectorView {
    let mut config = serde_json::to_value(smpp.config()).unwrap_or_default();
    if let Some(map) = config.as_object_mut() {
        map.remove("password");
    }
    ConnectorView {
        config,
        source: source.as_str(),
        bound: smpp.is_bound(),
        receiving: smpp.is_receiving(),
        binds: smpp.binds().into_iter().map(BindView::from).collect(),
        queued: smpp.queued(),
        throttle_ms: smpp.throttle().as_millis(),
        unmatched_receipts: unmatched,
        waiting,
    }
}

/// Unmatched receipts and unsent SMS, by network.
async fn counts(
    state: &AppState,
) -> AppResult<(Vec<(String, i64)>, Vec<(String, i64, Timestamp)>)> {
    state
        .store
        .read(|c| Ok::<_, AppError>((smpp_receipts::counts(c)?, store::unsent_by_network(c)?)))
        .await
}

fn count_of(list: &[(String, i64)], name: &str) -> i64 {
    list.iter().find(|(n, _)| n == name).map_or(0, |(_, n)| *n)
}

/// `GET /admin/smpp`.
pub(crate) async fn list(State(state): State<AppState>) -> AppResult<Json<Vec<ConnectorView>>> {
    let (receipts, unsent) = counts(&state).await?;
    let unsent: Vec<(String, i64)> = unsent.into_iter().map(|(n, c, _)| (n, c)).collect();
    Ok(Json(
        state
            .networks
            .connectors()
            .iter()
            .map(|(c, s)| {
                let name = &c.config().name;
                view(c, *s, count_of(&receipts, name), count_of(&unsent, name))
            })
            .collect(),
    ))
}

/// `POST /admin/smpp`.
pub(crate) async fn add(
    State(state): State<AppState>,
    body: Bytes,
) -> AppResult<(StatusCode, Json<ConnectorView>)> {
    let config: SmppConfig = serde_json::from_slice(&body)
        .map_err(|e| AppError::invalid("body", format!("not an SMPP connector: {e}")))?;
    let mut all = state.networks.configs();
    if all.iter().any(|c| c.name == config.name) {
        return Err(AppError::invalid("name", "a connector has this name"));
    }
    all.push(config.clone());
    crate::config::validate_smpp(&all).map_err(|e| AppError::invalid("body", e.to_string()))?;
    let json = serde_json::to_string(&config).map_err(|e| AppError::internal(e.to_string()))?;
    let (name, now) = (config.name.clone(), state.clock.now());
    let stored = state
        .store
        .write(move |c| sms_parts::add_connector(c, &name, &json, now))
        .await?;
    if !stored {
        return Err(AppError::invalid("name", "a connector has this name"));
    }
    let smpp = state.networks.add(config, Source::Admin);
    // SMS waiting for a route may have one now.
    state.sms_wake.notify_one();
    Ok((StatusCode::CREATED, Json(view(&smpp, Source::Admin, 0, 0))))
}

/// What becomes of a removed connector's SMS not yet taken.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Waiting {
    /// They wait until a connector routes them.
    #[default]
    Keep,
    /// They end now: `error` (refunded) when no part left, else `failed`.
    Fail,
}

#[derive(Debug, Default, Deserialize)]
struct RemoveQuery {
    #[serde(default)]
    waiting: Waiting,
}

/// `DELETE /admin/smpp/{name}`.
pub(crate) async fn remove(
    State(state): State<AppState>,
    Path(name): Path<String>,
    RawQuery(raw): RawQuery,
) -> AppResult<StatusCode> {
    let q: RemoveQuery = extract::query(raw.as_deref())?;
    let source = state
        .networks
        .connectors()
        .into_iter()
        .find(|(c, _)| c.config().name == name)
        .map(|(_, s)| s)
        .ok_or_else(|| AppError::not_found("connector"))?;
    if source == Source::File {
        return Err(AppError::invalid(
            "name",
            "this connector is configured in the file: change the file",
        ));
    }
    let n = name.clone();
    state
        .store
        .write(move |c| sms_parts::remove_connector(c, &n))
        .await?;
    if let Some(smpp) = state.networks.remove(&name) {
        smpp.stop().await;
    }
    if q.waiting == Waiting::Fail {
        let reason = format!("the SMPP connector {name} was removed by the operator");
        fail_unsent(&state, &name, &reason).await?;
    }
    Ok(StatusCode::NO_CONTENT)
}

/// SMS not yet taken by the network they are routed to.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct WaitingView {
    network: String,
    /// Whether that network runs (a connector or the simulated network).
    running: bool,
    sms: i64,
    oldest: String,
}

/// `GET /admin/smpp/waiting`.
pub(crate) async fn waiting(State(state): State<AppState>) -> AppResult<Json<Vec<WaitingView>>> {
    let (_, unsent) = counts(&state).await?;
    Ok(Json(
        unsent
            .into_iter()
            .map(|(network, sms, oldest)| WaitingView {
                running: state.networks.carrier(&network).is_some(),
                network,
                sms,
                oldest: oldest.to_rfc3339(),
            })
            .collect(),
    ))
}

#[derive(Debug, Deserialize)]
struct FailBody {
    network: String,
}

/// `POST /admin/smpp/waiting/fail {network}`: `{failed}`.
pub(crate) async fn fail_waiting(
    State(state): State<AppState>,
    body: Bytes,
) -> AppResult<Json<serde_json::Value>> {
    let body: FailBody = extract::json_body(&body)?;
    if state.networks.carrier(&body.network).is_some() {
        return Err(AppError::invalid(
            "network",
            "this network runs: its SMS are on their way",
        ));
    }
    let reason = format!("no route: the network {} is gone", body.network);
    let failed = fail_unsent(&state, &body.network, &reason).await?;
    Ok(Json(serde_json::json!({ "failed": failed })))
}

/// Ends the SMS routed to `network` that no network took: `error` with a refund when no
/// part left, else `failed`. Returns how many.
async fn fail_unsent(state: &AppState, network: &str, reason: &str) -> AppResult<usize> {
    let mut failed = 0;
    loop {
        let (st, network, reason) = (state.clone(), network.to_owned(), reason.to_owned());
        let now = state.clock.now();
        let n = state
            .store
            .write(move |c| {
                let batch = store::unsent_of_network(c, &network, 500)?;
                let mut moves = Moves::default();
                for sms in &batch {
                    if sms_parts::taken(c, sms.id)?.is_empty() {
                        refuse(c, &st, &mut moves, sms, &reason, now)?;
                    } else {
                        apply(c, &st, &mut moves, sms, SmsStatus::Failed, &reason, now)?;
                    }
                }
                moves.flush(c)?;
                Ok::<_, AppError>(batch.len())
            })
            .await?;
        failed += n;
        if n < 500 {
            return Ok(failed);
        }
    }
}

#[derive(Debug, Default, Deserialize)]
struct ReceiptsQuery {
    connector: Option<String>,
    limit: Option<String>,
}

/// A receipt kept unmatched.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ReceiptView {
    connector: String,
    message_id: String,
    status: String,
    detail: String,
    received: String,
    tries: i64,
}

/// `GET /admin/smpp/receipts[?connector=&limit=]`: at most `limit` (1 to 1000, 100).
pub(crate) async fn receipts(
    State(state): State<AppState>,
    RawQuery(raw): RawQuery,
) -> AppResult<Json<Vec<ReceiptView>>> {
    let q: ReceiptsQuery = extract::query(raw.as_deref())?;
    let limit = match q.limit.as_deref() {
        None => 100,
        Some(l) => l
            .parse::<i64>()
            .ok()
            .filter(|n| (1..=1000).contains(n))
            .ok_or_else(|| AppError::invalid("limit", "must be 1 to 1000"))?,
    };
    let list = state
        .store
        .read(move |c| smpp_receipts::list(c, q.connector.as_deref(), limit))
        .await?;
    Ok(Json(
        list.into_iter()
            .map(|r| ReceiptView {
                connector: r.network,
                message_id: r.message_id,
                status: r.status,
                detail: r.detail,
                received: r.received.to_rfc3339(),
                tries: r.tries,
            })
            .collect(),
    ))
}
