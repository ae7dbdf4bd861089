//! What every HTTP interface shares: the error type, strict parsing, authentication, search
//! controls, and the middleware that gives every response a request id, counts it, and puts
//! the contract's JSON body on errors the router produces itself (404, 405, 413).

pub(crate) mod auth;
pub(crate) mod body;
pub(crate) mod client;
pub(crate) mod console_session;
pub(crate) mod error;
pub(crate) mod extract;
pub(crate) mod feed_slots;
pub(crate) mod guard;
pub(crate) mod idempotency;
pub(crate) mod login_as;
pub(crate) mod rate_limit;
pub(crate) mod search;

use std::time::Instant;

use axum::body::Body;
use axum::extract::{MatchedPath, Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use tracing::Instrument;

use crate::error::{AppError, ErrorCode};
use crate::metrics::{RequestLabels, RouteLabels};
use crate::state::AppState;

/// Name of the request id header.
pub(crate) const REQUEST_ID: &str = "x-request-id";

fn acceptable_request_id(v: &HeaderValue) -> Option<String> {
    let s = v.to_str().ok()?;
    (!s.is_empty() && s.len() <= 128 && s.bytes().all(|b| b.is_ascii_graphic()))
        .then(|| s.to_owned())
}

/// Echoes or assigns `x-request-id`, logs and counts the request.
pub(crate) async fn observe(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let id = req
        .headers()
        .get(REQUEST_ID)
        .and_then(acceptable_request_id)
        .unwrap_or_else(|| hex::encode(rand::random::<[u8; 8]>()));
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "unmatched".to_owned(), |p| p.as_str().to_owned());
    let method = req.method().to_string();
    let span = tracing::info_span!("request", request_id = %id, %method, %route);
    let started = Instant::now();
    let mut response = next.run(req).instrument(span.clone()).await;
    let status = response.status().as_u16();
    let elapsed = started.elapsed();
    span.in_scope(|| tracing::debug!(status, micros = elapsed.as_micros() as u64, "served"));
    state
        .metrics
        .latency
        .get_or_create(&RouteLabels {
            route: route.clone(),
        })
        .observe(elapsed.as_secs_f64());
    state
        .metrics
        .requests
        .get_or_create(&RequestLabels {
            route,
            method,
            status,
        })
        .inc();
    if let Ok(v) = HeaderValue::from_str(&id) {
        response.headers_mut().insert(REQUEST_ID, v);
    }
    response
}

/// Gives router-made errors the contract's body: 405 keeps its `Allow` header, 413 (a body
/// over the size limit) and 408 (a body that stalled) become 400, as the contract declares
/// neither.
pub(crate) async fn contract_errors(req: Request, next: Next) -> Response {
    let response = next.run(req).await;
    let status = response.status();
    let is_json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
    if is_json {
        return response;
    }
    let replacement = match status {
        StatusCode::METHOD_NOT_ALLOWED => AppError::new(
            ErrorCode::MethodNotAllowed,
            "method not allowed on this path; the Allow header lists those that are",
        ),
        StatusCode::PAYLOAD_TOO_LARGE => AppError::invalid("body", "the request body is too large"),
        StatusCode::REQUEST_TIMEOUT => {
            AppError::invalid("body", "the request body did not arrive in time")
        }
        StatusCode::BAD_REQUEST
        | StatusCode::UNSUPPORTED_MEDIA_TYPE
        | StatusCode::UNPROCESSABLE_ENTITY => {
            AppError::invalid("body", "the request body could not be read")
        }
        _ => return response,
    };
    let (mut parts, _) = response.into_parts();
    let fresh = replacement.into_response();
    parts.status = fresh.status();
    parts.headers.remove(header::CONTENT_LENGTH);
    parts.headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    let (_, body) = fresh.into_parts();
    Response::from_parts(parts, Body::new(body))
}

/// 404 for any path no interface serves.
pub(crate) async fn fallback() -> AppError {
    AppError::new(ErrorCode::NotFound, "no such path")
}
