//! The console's page and its files, embedded in the binary (no build step, no CDN: it
//! works offline), served with a strict Content-Security-Policy: scripts, styles and
//! connections from this origin only, no inline script, no framing.

use axum::extract::Path;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::error::AppError;

/// The policy of every console response.
pub(super) const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
    img-src 'self' data:; media-src 'self' blob:; connect-src 'self'; font-src 'self'; \
    form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/// The files: name, content type, content.
const FILES: &[(&str, &str, &str)] = &[
    (
        "app.css",
        "text/css; charset=utf-8",
        include_str!("../../console/app.css"),
    ),
    (
        "app.js",
        "text/javascript; charset=utf-8",
        include_str!("../../console/app.js"),
    ),
    (
        "api.js",
        "text/javascript; charset=utf-8",
        include_str!("../../console/api.js"),
    ),
    (
        "ui.js",
        "text/javascript; charset=utf-8",
        include_str!("../../console/ui.js"),
    ),
    (
        "views.js",
        "text/javascript; charset=utf-8",
        include_str!("../../console/views.js"),
    ),
    (
        "scenarios.js",
        "text/javascript; charset=utf-8",
        include_str!("../../console/scenarios.js"),
    ),
    (
        "sandbox.js",
        "text/javascript; charset=utf-8",
        include_str!("../../console/sandbox.js"),
    ),
    (
        "operator.js",
        "text/javascript; charset=utf-8",
        include_str!("../../console/operator.js"),
    ),
];

const INDEX: &str = include_str!("../../console/index.html");

fn secured(mut response: Response) -> Response {
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

/// `GET /`: the console's page.
pub(super) async fn index() -> Response {
    secured(([(header::CONTENT_TYPE, "text/html; charset=utf-8")], INDEX).into_response())
}

/// `GET /console/assets/{name}`.
pub(super) async fn file(Path(name): Path<String>) -> Response {
    match FILES.iter().find(|(n, _, _)| *n == name) {
        Some((_, kind, body)) => secured(([(header::CONTENT_TYPE, *kind)], *body).into_response()),
        None => {
            let mut r = AppError::not_found("console file").into_response();
            *r.status_mut() = StatusCode::NOT_FOUND;
            secured(r)
        }
    }
}
