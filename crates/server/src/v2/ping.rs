//! `GET /ping`: a health check that also proves the credentials work.

use axum::Json;
use axum::extract::State;
use serde::Serialize;

use crate::error::AppResult;
use crate::http::auth::Caller;
use crate::state::AppState;

/// The ping answer.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(crate) struct Pong {
    /// Always "pong".
    #[schema(example = "pong")]
    pub pong: &'static str,
    /// The server's time.
    #[schema(example = "2024-04-24T12:00:42.000Z")]
    pub time: String,
}

/// Health check.
#[utoipa::path(get, path = "/ping", tag = "System", responses((status = 200, description = "pong", body = Pong)))]
pub(crate) async fn ping(State(state): State<AppState>, _caller: Caller) -> AppResult<Json<Pong>> {
    Ok(Json(Pong {
        pong: "pong",
        time: state.clock.now().to_rfc3339(),
    }))
}
