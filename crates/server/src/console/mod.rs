//! The web console: a page served by the binary at `/` (embedded files, no build step) that
//! shows and drives everything an account has (SMS, calls, scenarios, numbers, audio,
//! recordings, webhooks, tasks, billing, end users, the sandbox) and, for the operator,
//! every account and the connectors. The page calls the v2.0 API, the sandbox and `/admin`
//! with its session cookie and CSRF token; the routes here are what the page needs beyond
//! them: signing in, the live feed, and keyset-paged lists.

mod assets;
mod deliveries;
mod feed;
pub(crate) mod feed_hub;
mod lists;
pub(crate) mod session;

use axum::Router;
use axum::routing::{get, post};

use crate::state::AppState;

/// The console's routes.
pub(crate) fn router() -> Router<AppState> {
    Router::new()
        .route("/", get(assets::index))
        .route("/console/assets/{name}", get(assets::file))
        .route(
            "/console/session",
            post(session::sign_in)
                .get(session::current)
                .delete(session::sign_out),
        )
        .route("/console/open/{token}", get(session::open_link))
        .route("/console/events", get(feed::events_stream))
        .route("/console/api/sms", get(lists::sms_list))
        .route("/console/api/sms/{sid}", get(lists::sms_detail))
        .route("/console/api/sms/{sid}/deliveries", get(deliveries::of_sms))
        .route("/console/api/calls", get(lists::call_list))
        .route("/console/api/calls/{callid}", get(lists::call_detail))
        .route("/console/api/ledger", get(lists::ledger))
        .route("/console/api/actions/{sid}/runs", get(lists::runs))
        .route("/console/api/validate", post(lists::validate))
        .route(
            "/console/api/webhooks/{sid}/deliveries",
            get(deliveries::of_webhook),
        )
        .route("/console/api/deliveries/{id}", get(deliveries::one))
        .route(
            "/console/api/deliveries/{id}/redeliver",
            post(deliveries::redeliver),
        )
}
