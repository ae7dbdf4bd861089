//! `Idempotency-Key` on POST (CONTRACT section 2): the first answer is stored in the database
//! for 24 hours and replayed for the same key and request; the same key with another request
//! is 400 `idempotency_mismatch`. Keys belong to the acting account, so they hold across
//! nodes and restarts.

use axum::body::{Body, to_bytes};
use axum::extract::{FromRequestParts, Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use dialtone_store::idempotency::{self, Answer, Begin};
use sha2::{Digest, Sha256};

use super::auth::Caller;
use crate::error::{AppError, Detail, ErrorCode};
use crate::state::AppState;

/// The request header.
pub(crate) const HEADER: &str = "idempotency-key";
/// Longest key.
pub(crate) const MAX_KEY: usize = 255;
/// How long a running request holds its key before a retry may run it again.
const HOLD_MS: i64 = 60_000;
/// Largest answer kept (answers to POST are small JSON objects).
const MAX_ANSWER: usize = 4 * 1024 * 1024;

/// The middleware: passes through anything but a keyed POST.
pub(crate) async fn guard(State(state): State<AppState>, req: Request, next: Next) -> Response {
    if req.method() != Method::POST || !req.headers().contains_key(HEADER) {
        return next.run(req).await;
    }
    match keyed(&state, req, next).await {
        Ok(r) | Err(r) => r,
    }
}

async fn keyed(state: &AppState, req: Request, next: Next) -> Result<Response, Response> {
    let (mut parts, body) = req.into_parts();
    // Credentials first: a request that is not authenticated is 401 whatever its key.
    let caller = Caller::from_request_parts(&mut parts, state)
        .await
        .map_err(IntoResponse::into_response)?;
    let key = parts
        .headers
        .get(HEADER)
        .and_then(|v| v.to_str().ok())
        .filter(|k| (1..=MAX_KEY).contains(&k.chars().count()))
        .map(str::to_owned)
        .ok_or_else(|| {
            AppError::validation(vec![Detail::new(
                "Idempotency-Key",
                format!("must be 1 to {MAX_KEY} visible ASCII characters"),
            )])
            .into_response()
        })?;
    let limit = state
        .config
        .max_body_bytes
        .max(state.config.audio_max_bytes.saturating_mul(2));
    let bytes = to_bytes(body, limit).await.map_err(|_| {
        AppError::invalid("body", "the body is too large or was cut off").into_response()
    })?;
    let request_hash = request_hash(&parts, &bytes);
    let (account, now) = (caller.account.id, state.clock.now());
    let k = key.clone();
    let begun = state
        .store
        .write(move |c| idempotency::begin(c, account, &k, &request_hash, HOLD_MS, now))
        .await
        .map_err(|e| AppError::from(e).into_response())?;
    if let Some(early) = answered_without_running(begun) {
        return early;
    }
    // Every write the request makes also marks the key as committed, in its transaction.
    let response = idempotency::scope(
        account,
        key.clone(),
        next.run(Request::from_parts(parts, Body::from(bytes))),
    )
    .await;
    keep(state, account, key, response).await
}

/// What identifies a request under its key: method, path with query, and body.
fn request_hash(parts: &axum::http::request::Parts, bytes: &[u8]) -> String {
    let mut hash = Sha256::new();
    hash.update(parts.method.as_str());
    hash.update(b" ");
    hash.update(
        parts
            .uri
            .path_and_query()
            .map_or(parts.uri.path(), |p| p.as_str()),
    );
    hash.update(b"\n");
    hash.update(bytes);
    hex::encode(hash.finalize())
}

/// The answer of a key already used (replayed, refused, or still running); None when the
/// request is to run.
fn answered_without_running(begun: Begin) -> Option<Result<Response, Response>> {
    match begun {
        Begin::Replay(answer) => Some(Ok(replay(answer))),
        Begin::Mismatch => Some(Err(AppError::new(
            ErrorCode::IdempotencyMismatch,
            "this Idempotency-Key was used with another request",
        )
        .into_response())),
        Begin::InFlight => {
            let mut r = AppError::new(
                ErrorCode::RateLimited,
                "a request with this Idempotency-Key is still running: retry shortly",
            )
            .into_response();
            r.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
            Some(Err(r))
        }
        Begin::AnswerLost => Some(Err(AppError::new(
            ErrorCode::IdempotencyAnswerLost,
            "the request with this Idempotency-Key was carried out, but its answer was lost \
             when the server stopped; it is not run again: look its result up instead",
        )
        .into_response())),
        Begin::Run => None,
    }
}

/// Keeps the answer of a request that ran under its key (a server error releases the key
/// instead, so a retry runs again).
async fn keep(
    state: &AppState,
    account: i64,
    key: String,
    response: Response,
) -> Result<Response, Response> {
    let status = response.status();
    if status.is_server_error() {
        let k = key.clone();
        // Best effort: if this fails too, the hold lapses after HOLD_MS.
        let _ = state
            .store
            .write(move |c| idempotency::release(c, account, &k))
            .await;
        return Ok(response);
    }
    let (head, body) = response.into_parts();
    let body = to_bytes(body, MAX_ANSWER)
        .await
        .map_err(|e| AppError::internal(format!("reading the answer: {e}")).into_response())?;
    let answer = Answer {
        status: status.as_u16(),
        content_type: head
            .headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned),
        body: body.to_vec(),
    };
    // The request's own change is committed: answer it even if the answer cannot be kept
    // (the key's hold then lapses and a retry runs again, which the docs say).
    if let Err(e) = state
        .store
        .write(move |c| idempotency::finish(c, account, &key, &answer))
        .await
    {
        tracing::error!(error = %format!("{e:#}"), "could not store an idempotent answer");
    }
    Ok(Response::from_parts(head, Body::from(body)))
}

fn replay(answer: Answer) -> Response {
    let mut r = Response::new(Body::from(answer.body));
    *r.status_mut() = StatusCode::from_u16(answer.status).unwrap_or(StatusCode::OK);
    if let Some(ct) = answer
        .content_type
        .and_then(|ct| HeaderValue::from_str(&ct).ok())
    {
        r.headers_mut().insert(header::CONTENT_TYPE, ct);
    }
    r.headers_mut()
        .insert("idempotent-replayed", HeaderValue::from_static("true"));
    r
}
