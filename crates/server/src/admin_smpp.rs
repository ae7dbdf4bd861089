//! `/admin/smpp`: the operator's SMPP connectors. `GET` lists them with their bind state
//! (passwords never shown), `POST` adds one (the `[[smpp]]` fields of the TOML file, as
//! JSON; stored, started and routed at once), `DELETE /admin/smpp/{name}` unbinds and
//! forgets one added here (those of the file change with the file).

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use dialtone_carrier::smpp::{Smpp, SmppConfig};
use serde::Serialize;

use crate::http::error::{ApiError, ApiResult};
use crate::networks::Source;
use crate::state::AppState;

/// A connector as the operator sees it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ConnectorView {
    /// Its configuration, password removed.
    #[serde(flatten)]
    config: serde_json::Value,
    /// `file` or `admin`.
    source: &'static str,
    /// Submits can leave now.
    bound: bool,
    /// Deliveries can arrive now.
    receiving: bool,
}

fn view(smpp: &Smpp, source: Source) -> ConnectorView {
    let mut config = serde_json::to_value(smpp.config()).unwrap_or_default();
    if let Some(map) = config.as_object_mut() {
        map.remove("password");
    }
    ConnectorView {
        config,
        source: source.as_str(),
        bound: smpp.is_bound(),
        receiving: smpp.is_receiving(),
    }
}

/// `GET /admin/smpp`.
pub async fn list(State(state): State<AppState>) -> Json<Vec<ConnectorView>> {
    Json(
        state
            .networks
            .connectors()
            .iter()
            .map(|(c, s)| view(c, *s))
            .collect(),
    )
}

/// `POST /admin/smpp`.
pub async fn add(
    State(state): State<AppState>,
    body: Bytes,
) -> ApiResult<(StatusCode, Json<ConnectorView>)> {
    let config: SmppConfig = serde_json::from_slice(&body)
        .map_err(|e| ApiError::invalid("body", format!("not an SMPP connector: {e}")))?;
    let mut all = state.networks.configs();
    if all.iter().any(|c| c.name == config.name) {
        return Err(ApiError::invalid("name", "a connector has this name"));
    }
    all.push(config.clone());
    crate::config::validate_smpp(&all).map_err(|e| ApiError::invalid("body", e.to_string()))?;
    let json = serde_json::to_string(&config).map_err(|e| ApiError::internal(e.to_string()))?;
    let (name, now) = (config.name.clone(), state.clock.now());
    let stored = state
        .store
        .write(move |c| dialtone_store::sms_parts::add_connector(c, &name, &json, now))
        .await?;
    if !stored {
        return Err(ApiError::invalid("name", "a connector has this name"));
    }
    let smpp = state.networks.add(config, Source::Admin);
    Ok((StatusCode::CREATED, Json(view(&smpp, Source::Admin))))
}

/// `DELETE /admin/smpp/{name}`.
pub async fn remove(
    State(state): State<AppState>,
    Path(name): Path<String>,
) -> ApiResult<StatusCode> {
    let source = state
        .networks
        .connectors()
        .into_iter()
        .find(|(c, _)| c.config().name == name)
        .map(|(_, s)| s)
        .ok_or_else(|| ApiError::not_found("connector"))?;
    if source == Source::File {
        return Err(ApiError::invalid(
            "name",
            "this connector is configured in the file: change the file",
        ));
    }
    let n = name.clone();
    state
        .store
        .write(move |c| dialtone_store::sms_parts::remove_connector(c, &n))
        .await?;
    if let Some(smpp) = state.networks.remove(&name) {
        smpp.stop().await;
    }
    Ok(StatusCode::NO_CONTENT)
}
