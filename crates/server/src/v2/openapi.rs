//! The OpenAPI 3.1 document of v2.0: its header, security schemes, and the error responses
//! every operation can give, added in one place.

use std::sync::Arc;

use axum::http::header;
use axum::routing::{MethodRouter, get};
use utoipa::OpenApi;
use utoipa::openapi::security::{ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::openapi::{ContentBuilder, Ref, ResponseBuilder};

use serde_json::Value;

use super::common::{NameCreatedUpdated, SID_PATTERN, SortOrder};
use super::numbers::NumberSort;
use super::recordings::RecordingSort;
use super::sms::{DirectionWord, EncodingWord, SmsSort, TrafficWord};
use super::webhooks::{HmacAlgo, WebhookStatus};
use crate::error::Detail;
use crate::http::error::ErrorBody;
use crate::state::AppState;

#[derive(OpenApi)]
#[openapi(
    info(title = "dialtone REST API", version = "2.1.0", description = "Voice, SMS and phone numbers (REST v2.0)"),
    servers((url = "/v2.0")),
    security(("ApiKeyAuth" = []), ("BasicAuth" = [])),
    // The schemas parameters and properties name only through `value_type`, which utoipa
    // does not collect: every `$ref` of the document must resolve.
    components(schemas(
        ErrorBody,
        Detail,
        SortOrder,
        NameCreatedUpdated,
        NumberSort,
        RecordingSort,
        EncodingWord,
        TrafficWord,
        DirectionWord,
        SmsSort,
        HmacAlgo,
        WebhookStatus
    ))
)]
struct ApiDoc;

/// The document's header, before the routes add their paths.
pub(crate) fn base() -> utoipa::openapi::OpenApi {
    let mut doc = ApiDoc::openapi();
    let components = doc.components.get_or_insert_with(Default::default);
    components.add_security_scheme(
        "ApiKeyAuth",
        SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::new("x-api-key"))),
    );
    components.add_security_scheme(
        "BasicAuth",
        SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Basic).build()),
    );
    doc
}

const ERRORS: &[(&str, &str)] = &[
    ("400", "invalid request"),
    ("401", "missing or invalid credentials"),
    ("403", "forbidden"),
    ("404", "not found"),
    ("405", "method not allowed"),
    ("429", "too many requests"),
    ("500", "internal error"),
];

/// Adds the contract's error responses to every operation that does not declare them, then
/// returns the document as served: request bodies closed (unknown properties are refused by
/// name) and the words of parameters the code lists.
pub(crate) fn finish(doc: &mut utoipa::openapi::OpenApi) -> Value {
    add_errors(doc);
    let mut value = serde_json::to_value(&*doc).unwrap_or_default();
    close_request_bodies(&mut value);
    for (path, method) in OPTIONAL_BODIES {
        if let Some(Value::Object(body)) = value.pointer_mut(&format!(
            "/paths/{}/{method}/requestBody",
            path.replace('/', "~1")
        )) {
            body.insert("required".into(), Value::Bool(false));
        }
    }
    constrain_parameters(&mut value);
    value
}

/// Operations whose JSON body may be empty (read as `{}`); utoipa marks every body required.
const OPTIONAL_BODIES: &[(&str, &str)] = &[
    ("/actions/{sid}/runs", "post"),
    ("/recordings/{sid}", "patch"),
];

/// The words a query parameter accepts, where the code lists them (the derives cannot name
/// a constant's values): `(path, parameter, words)`.
fn parameter_words() -> Vec<(&'static str, &'static str, Vec<&'static str>)> {
    use dialtone_domain::number::{NumberClass, NumberType};
    use dialtone_domain::sms::SmsStatus;
    use dialtone_store::audio_files::{SOURCES, STATUSES};
    let classes: Vec<_> = NumberClass::ALL.iter().map(|c| c.as_str()).collect();
    let types: Vec<_> = NumberType::ALL.iter().map(|t| t.as_str()).collect();
    let sms_statuses: Vec<_> = SmsStatus::ALL.iter().map(|s| s.as_str()).collect();
    vec![
        ("/numbers", "class", classes.clone()),
        ("/numbers", "type", types.clone()),
        ("/numbers", "detached", vec!["true"]),
        ("/numbers/store/prefixes", "type", types.clone()),
        ("/numbers/store", "type", types),
        ("/numbers/store", "class", classes),
        ("/audio-files", "status", STATUSES.to_vec()),
        ("/audio-files", "source", SOURCES.to_vec()),
        ("/sms", "status", sms_statuses),
        ("/webhooks", "type", crate::webhooks::EVENT_TYPES.to_vec()),
        ("/webhooks", "sort", vec!["created"]),
        ("/recordings", "type", vec!["call", "voicemail"]),
        ("/recordings", "read", vec!["true", "false"]),
        ("/calls/export", "direction", vec!["inbound", "outbound"]),
    ]
}

/// Adds the words of [`parameter_words`], and the sid pattern to the items of sid lists.
fn constrain_parameters(value: &mut Value) {
    let words = parameter_words();
    let Some(paths) = value["paths"].as_object_mut() else {
        return;
    };
    for (path, item) in paths.iter_mut() {
        for method in ["get", "post", "put", "patch", "delete"] {
            let Some(params) = item
                .get_mut(method)
                .and_then(|op| op.get_mut("parameters"))
                .and_then(Value::as_array_mut)
            else {
                continue;
            };
            for param in params {
                let name = param["name"].as_str().unwrap_or_default().to_owned();
                let schema = &mut param["schema"];
                if name == "sid" && schema["type"] == "array" {
                    schema["items"]["pattern"] = SID_PATTERN.into();
                }
                if param["in"] != "query" {
                    continue;
                }
                for (p, n, w) in &words {
                    if p == path && *n == name {
                        param["schema"]["enum"] = w.clone().into();
                    }
                }
            }
        }
    }
}

fn add_errors(doc: &mut utoipa::openapi::OpenApi) {
    for item in doc.paths.paths.values_mut() {
        let ops = [
            &mut item.get,
            &mut item.post,
            &mut item.put,
            &mut item.patch,
            &mut item.delete,
        ];
        for op in ops.into_iter().flatten() {
            for (status, description) in ERRORS {
                if !op.responses.responses.contains_key(*status) {
                    let response = ResponseBuilder::new()
                        .description(*description)
                        .content(
                            "application/json",
                            ContentBuilder::new()
                                .schema(Some(Ref::from_schema_name("ErrorBody")))
                                .build(),
                        )
                        .build();
                    op.responses
                        .responses
                        .insert((*status).to_owned(), response.into());
                }
            }
        }
    }
}

/// The names of the component schemas `value` refers to.
fn refs(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                match (k.as_str(), v) {
                    ("$ref", Value::String(r)) => {
                        if let Some(name) = r.strip_prefix("#/components/schemas/") {
                            out.push(name.to_owned());
                        }
                    }
                    _ => refs(v, out),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|v| refs(v, out)),
        _ => {}
    }
}

/// Request bodies are parsed strictly: every object schema a request body uses, directly or
/// through other schemas, gets `additionalProperties: false` unless it says otherwise.
fn close_request_bodies(value: &mut Value) {
    let mut pending = Vec::new();
    if let Some(paths) = value["paths"].as_object() {
        for item in paths.values() {
            for method in ["get", "post", "put", "patch", "delete"] {
                refs(&item[method]["requestBody"], &mut pending);
            }
        }
    }
    let mut seen = std::collections::BTreeSet::new();
    while let Some(name) = pending.pop() {
        if !seen.insert(name.clone()) {
            continue;
        }
        let Some(schema) = value["components"]["schemas"].get_mut(&name) else {
            continue;
        };
        refs(schema, &mut pending);
        close_objects(schema);
    }
}

/// Sets `additionalProperties: false` on `schema` and its inline object properties.
fn close_objects(schema: &mut Value) {
    let Some(map) = schema.as_object_mut() else {
        return;
    };
    if map.contains_key("properties") && !map.contains_key("additionalProperties") {
        map.insert("additionalProperties".into(), Value::Bool(false));
    }
    if let Some(Value::Object(props)) = map.get_mut("properties") {
        for p in props.values_mut() {
            close_objects(p);
        }
    }
}

/// The handler of `GET /v2.0/openapi.json` (no credentials needed), serving `doc`.
pub(crate) fn serve(doc: &Value) -> MethodRouter<AppState> {
    let json: Arc<str> = doc.to_string().into();
    get(move || {
        let json = json.clone();
        async move {
            (
                [(header::CONTENT_TYPE, "application/json")],
                json.to_string(),
            )
        }
    })
}
