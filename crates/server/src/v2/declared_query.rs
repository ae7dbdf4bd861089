//! Every v2.0 operation refuses a query parameter its OpenAPI document does not declare,
//! before its handler runs (so before a 404 for a missing resource too): one check, read off
//! the same document schemathesis holds the server to, instead of one per handler.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use axum::extract::{MatchedPath, Request};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::Value;

use crate::error::{AppError, Detail};

/// The query parameters each operation declares, by method and path template.
#[derive(Debug, Default)]
pub(crate) struct Declared(HashMap<(String, String), HashSet<String>>);

impl Declared {
    /// Reads the declarations off the document (paths relative to `/v2.0`).
    pub(crate) fn of(doc: &Value) -> Self {
        let mut out = HashMap::new();
        let Some(paths) = doc.get("paths").and_then(Value::as_object) else {
            return Self(out);
        };
        for (path, item) in paths {
            let Some(item) = item.as_object() else {
                continue;
            };
            let shared = names(item.get("parameters"));
            for (method, op) in item {
                if !["get", "put", "post", "delete", "patch"].contains(&method.as_str()) {
                    continue;
                }
                let mut allowed = shared.clone();
                allowed.extend(names(op.get("parameters")));
                out.insert((method.to_ascii_uppercase(), path.clone()), allowed);
            }
        }
        Self(out)
    }

    /// The unknown parameters of a query string, for the operation `method path`; none when
    /// the operation is not in the document.
    fn unknown(&self, method: &str, path: &str, raw: Option<&str>) -> Vec<String> {
        let Some(allowed) = self.0.get(&(method.to_owned(), path.to_owned())) else {
            return Vec::new();
        };
        let mut unknown: Vec<String> = form_urlencoded::parse(raw.unwrap_or_default().as_bytes())
            .map(|(k, _)| k.into_owned())
            .filter(|k| !allowed.contains(k))
            .collect();
        unknown.sort();
        unknown.dedup();
        unknown
    }
}

fn names(parameters: Option<&Value>) -> HashSet<String> {
    parameters
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|p| p.get("in").and_then(Value::as_str) == Some("query"))
        .filter_map(|p| p.get("name").and_then(Value::as_str).map(str::to_owned))
        .collect()
}

/// The middleware: 400 `validation_error` naming each unknown parameter.
pub(crate) async fn check(declared: Arc<Declared>, req: Request, next: Next) -> Response {
    let template = req
        .extensions()
        .get::<MatchedPath>()
        .map(|m| m.as_str().trim_start_matches("/v2.0").to_owned());
    if let Some(template) = template {
        let unknown = declared.unknown(req.method().as_str(), &template, req.uri().query());
        if !unknown.is_empty() {
            return AppError::validation(
                unknown
                    .into_iter()
                    .map(|p| Detail::new(p, "unknown parameter"))
                    .collect(),
            )
            .into_response();
        }
    }
    next.run(req).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_declared_query_parameters_pass() {
        let (_, mut doc) = crate::v2::router();
        let declared = Declared::of(&crate::v2::openapi::finish(&mut doc));
        assert!(declared.unknown("GET", "/ping", None).is_empty());
        assert_eq!(declared.unknown("GET", "/ping", Some("bogus=1")), ["bogus"]);
        assert!(
            declared
                .unknown("GET", "/sms", Some("to=%2B33612345678"))
                .is_empty()
        );
        assert_eq!(declared.unknown("GET", "/sms", Some("to=1&x=2&x=3")), ["x"]);
        assert!(
            declared
                .unknown("POST", "/webhooks", Some("type=sms.mo"))
                .is_empty()
        );
        // Not an operation of the document: left to the router.
        assert!(
            declared
                .unknown("GET", "/nowhere", Some("bogus=1"))
                .is_empty()
        );
    }
}
