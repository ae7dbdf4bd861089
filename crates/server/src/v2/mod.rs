//! REST v2.0 under `/v2.0`: every route is registered together with its OpenAPI
//! description, so `/v2.0/openapi.json` always lists exactly the paths that exist.

pub(crate) mod actions;
pub(crate) mod audio_files;
pub(crate) mod billing;
pub(crate) mod calls;
pub(crate) mod common;
pub(crate) mod declared_query;
pub(crate) mod end_users;
pub(crate) mod number_store;
pub(crate) mod numbers;
pub(crate) mod openapi;
pub(crate) mod ping;
pub(crate) mod recordings;
pub(crate) mod sms;
pub(crate) mod speech;
pub(crate) mod tasks;
pub(crate) mod webhooks;

use axum::Router;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::state::AppState;

/// The v2.0 router (paths relative to `/v2.0`) and its OpenAPI document.
pub(crate) fn router() -> (Router<AppState>, utoipa::openapi::OpenApi) {
    let (router, mut doc) = OpenApiRouter::with_openapi(openapi::base())
        .routes(routes!(ping::ping))
        .routes(routes!(actions::schema))
        .routes(routes!(actions::search, actions::create))
        .routes(routes!(actions::get, actions::update, actions::delete))
        .routes(routes!(actions::attach_number, actions::detach_number))
        .routes(routes!(actions::run))
        .routes(routes!(actions::get_run, actions::stop_run))
        .routes(routes!(calls::hang_up))
        .routes(routes!(tasks::export_calls))
        .routes(routes!(tasks::get, tasks::cancel))
        .routes(routes!(tasks::download))
        .routes(routes!(audio_files::download))
        .routes(routes!(speech::set_tts))
        .routes(routes!(speech::voices))
        .routes(routes!(
            recordings::search,
            recordings::update_many,
            recordings::delete_many
        ))
        .routes(routes!(
            recordings::get,
            recordings::update,
            recordings::delete
        ))
        .routes(routes!(recordings::file))
        .routes(routes!(end_users::search, end_users::create))
        .routes(routes!(
            end_users::get,
            end_users::update,
            end_users::delete
        ))
        .routes(routes!(billing::credit))
        .routes(routes!(billing::destinations))
        .routes(routes!(sms::send, sms::search))
        .routes(routes!(sms::get))
        .routes(routes!(webhooks::search, webhooks::create))
        .routes(routes!(webhooks::get, webhooks::update, webhooks::delete))
        .routes(routes!(webhooks::deliveries))
        .routes(routes!(numbers::search))
        .routes(routes!(numbers::get, numbers::update, numbers::release))
        .routes(routes!(numbers::attach_scenario))
        .routes(routes!(numbers::detach_scenario))
        .routes(routes!(numbers::assign_end_user))
        .routes(routes!(number_store::countries))
        .routes(routes!(number_store::types))
        .routes(routes!(number_store::prefixes))
        .routes(routes!(number_store::reserve))
        .routes(routes!(
            number_store::get,
            number_store::buy,
            number_store::cancel
        ))
        .merge(audio_files::router())
        .split_for_parts();
    let served = openapi::finish(&mut doc);
    let declared = std::sync::Arc::new(declared_query::Declared::of(&served));
    let router = router
        .route_layer(axum::middleware::from_fn(move |req, next| {
            declared_query::check(declared.clone(), req, next)
        }))
        .route("/openapi.json", openapi::serve(&served));
    (router, doc)
}
