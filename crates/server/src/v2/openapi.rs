//! The OpenAPI 3.1 document of v2.0: its header, security schemes, and the error responses
//! every operation can give, added in one place.

use std::sync::Arc;

use axum::http::header;
use axum::routing::{MethodRouter, get};
use utoipa::OpenApi;
use utoipa::openapi::security::{ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::openapi::{ContentBuilder, Ref, ResponseBuilder};

use crate::http::error::{Detail, ErrorBody};
use crate::state::AppState;

#[derive(OpenApi)]
#[openapi(
    info(title = "dialtone REST API", version = "2.1.0", description = "Voice, SMS and phone numbers (REST v2.0)"),
    servers((url = "/v2.0")),
    security(("ApiKeyAuth" = []), ("BasicAuth" = [])),
    components(schemas(ErrorBody, Detail))
)]
struct ApiDoc;

/// The document's header, before the routes add their paths.
pub fn base() -> utoipa::openapi::OpenApi {
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

/// Adds the contract's error responses to every operation that does not declare them.
pub fn finish(doc: &mut utoipa::openapi::OpenApi) {
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

/// The handler of `GET /v2.0/openapi.json` (no credentials needed), serving `doc`.
pub fn serve(doc: &utoipa::openapi::OpenApi) -> MethodRouter<AppState> {
    let json: Arc<str> = doc.to_json().unwrap_or_default().into();
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
