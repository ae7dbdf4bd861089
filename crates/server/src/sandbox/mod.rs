//! `/sandbox`: controls of the simulated network, with the same credentials as v2.0, acting
//! on the caller's account. Mounted only when the simulated network is in use.

pub(crate) mod calls;
mod sms;

use axum::Router;
use axum::routing::{get, post};

use crate::state::AppState;

/// The sandbox routes.
pub(crate) fn router() -> Router<AppState> {
    Router::new()
        .route(
            "/sandbox/sms",
            get(sms::left_the_platform).post(sms::inbound),
        )
        .route("/sandbox/calls", post(calls::place))
        .route("/sandbox/calls/{callid}", get(calls::show))
        .route("/sandbox/calls/{callid}/dtmf", post(calls::dtmf))
        .route(
            "/sandbox/calls/{callid}/audio",
            // The handler counts the body against --audio-max-bytes itself.
            post(calls::audio).layer(axum::extract::DefaultBodyLimit::disable()),
        )
        .route("/sandbox/calls/{callid}/hangup", post(calls::hangup))
        .route(
            "/sandbox/calls/{callid}/timeline/{index}/audio",
            get(calls::said),
        )
}
