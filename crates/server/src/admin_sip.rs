//! `/admin/sip`: the node's SIP side and its trunks.
//!
//! - `GET /admin/sip`: the node (where it listens, its calls, its media counters) and each
//!   trunk with its health (the addresses its host resolves to, its registration, its last
//!   error, its calls); passwords never shown.
//! - `POST /admin/sip`: adds a trunk (the `[[sip]]` fields of the TOML file, as JSON; stored,
//!   started and routed at once; the node's SIP side starts with it if it did not run).
//! - `DELETE /admin/sip/{name}`: stops and forgets a trunk added here (those of the file
//!   change with the file); its calls in progress go on to their end.

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use dialtone_sip::{TrunkConfig, TrunkStatus};
use serde::Serialize;

use crate::error::{AppError, AppResult};
use crate::state::AppState;

/// The node's SIP side.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct NodeView {
    listen: String,
    calls: usize,
    media: MediaView,
    /// How soon spoken prompts started: from the `say` reaching the node to its first
    /// audio queued on the call (the next 20 ms frame sends it).
    say_first_audio: dialtone_sip::FirstAudioView,
}

/// The node's media counters.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct MediaView {
    legs: u64,
    packets_sent: u64,
    packets_sent_late: u64,
    packets_received: u64,
    packets_lost: u64,
    packets_late: u64,
}

/// A trunk as the operator sees it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct TrunkView {
    #[serde(flatten)]
    status: TrunkStatus,
    /// `file` or `admin`.
    source: &'static str,
}

/// What `GET /admin/sip` answers.
#[derive(Debug, Serialize)]
pub(crate) struct SipView {
    node: Option<NodeView>,
    trunks: Vec<TrunkView>,
}

fn source_of(state: &AppState, name: &str) -> &'static str {
    if state.config.sip.iter().any(|t| t.name == name) {
        "file"
    } else {
        "admin"
    }
}

/// `GET /admin/sip`.
pub(crate) async fn list(State(state): State<AppState>) -> Json<SipView> {
    let Some(node) = state.networks.sip() else {
        return Json(SipView {
            node: None,
            trunks: Vec::new(),
        });
    };
    let m = node.media();
    Json(SipView {
        node: Some(NodeView {
            listen: node.local_addr().to_string(),
            calls: node.calls(),
            media: MediaView {
                legs: m.legs,
                packets_sent: m.sent,
                packets_sent_late: m.sent_late,
                packets_received: m.received,
                packets_lost: m.lost,
                packets_late: m.late,
            },
            say_first_audio: node.first_audio(),
        }),
        trunks: node
            .trunk_statuses()
            .into_iter()
            .map(|status| TrunkView {
                source: source_of(&state, &status.config.name),
                status,
            })
            .collect(),
    })
}

/// `POST /admin/sip`.
pub(crate) async fn add(
    State(state): State<AppState>,
    body: Bytes,
) -> AppResult<(StatusCode, Json<TrunkView>)> {
    let config: TrunkConfig = serde_json::from_slice(&body)
        .map_err(|e| AppError::invalid("body", format!("not a SIP trunk: {e}")))?;
    let mut all: Vec<TrunkConfig> = state
        .networks
        .sip()
        .map(|n| n.trunk_statuses().into_iter().map(|s| s.config).collect())
        .unwrap_or_default();
    if all.iter().any(|t| t.name == config.name) {
        return Err(AppError::invalid("name", "a trunk has this name"));
    }
    all.push(config.clone());
    crate::config::validate_sip(&all).map_err(|e| AppError::invalid("body", e.to_string()))?;
    let json = serde_json::to_string(&config).map_err(|e| AppError::internal(e.to_string()))?;
    let (name, now) = (config.name.clone(), state.clock.now());
    let stored = state
        .store
        .write(move |c| dialtone_store::sip_trunks::add(c, &name, &json, now))
        .await?;
    if !stored {
        return Err(AppError::invalid("name", "a trunk has this name"));
    }
    let node = match state.networks.sip() {
        Some(node) => {
            node.add_trunk(config.clone()).await;
            node.clone()
        }
        None => crate::voice::sip::start(&state, vec![config.clone()])
            .await
            .map_err(AppError::internal)?,
    };
    let status = node
        .trunk_statuses()
        .into_iter()
        .find(|s| s.config.name == config.name)
        .ok_or_else(|| AppError::internal("the trunk did not start"))?;
    Ok((
        StatusCode::CREATED,
        Json(TrunkView {
            status,
            source: "admin",
        }),
    ))
}

/// `DELETE /admin/sip/{name}`.
pub(crate) async fn remove(
    State(state): State<AppState>,
    Path(name): Path<String>,
) -> AppResult<StatusCode> {
    if state.config.sip.iter().any(|t| t.name == name) {
        return Err(AppError::invalid(
            "name",
            "this trunk is configured in the file: change the file",
        ));
    }
    let n = name.clone();
    let removed = state
        .store
        .write(move |c| dialtone_store::sip_trunks::remove(c, &n))
        .await?;
    let stopped = state
        .networks
        .sip()
        .is_some_and(|node| node.remove_trunk(&name));
    if !removed && !stopped {
        return Err(AppError::not_found("trunk"));
    }
    Ok(StatusCode::NO_CONTENT)
}
