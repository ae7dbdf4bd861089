//! The earlier JSON-RPC 2.0 interface at `POST /json-rpc/v1.1/`: positional parameters only,
//! HTTP 200 for every answer (the official SDKs treat any other status as a transport
//! failure), errors as `{code, message, data}` with the earlier numeric codes.

mod apps;
mod did;
mod jobs;
mod media;
pub mod sms;
mod system;
mod webhooks;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};

use crate::http::auth::{LegacyCaller, legacy_caller};
use crate::http::error::ApiError;
use crate::state::AppState;

/// JSON-RPC error codes used by dialtone.
pub mod codes {
    /// The body is not JSON.
    pub const PARSE_ERROR: i64 = -32700;
    /// Not a JSON-RPC 2.0 request object.
    pub const INVALID_REQUEST: i64 = -32600;
    /// No such method.
    pub const METHOD_NOT_FOUND: i64 = -32601;
    /// Wrong number or kind of parameters.
    pub const INVALID_PARAMS: i64 = -32602;
    /// Server fault.
    pub const INTERNAL: i64 = -32603;
    /// Authentication failed.
    pub const AUTH: i64 = 22;
    /// Feature not allowed (suspended account, missing approval, no credit).
    pub const NOT_ALLOWED: i64 = 100;
    /// Object not found.
    pub const NOT_FOUND: i64 = 115;
    /// A required property is missing.
    pub const MISSING_PROPERTY: i64 = 150;
    /// A property has an invalid value.
    pub const INVALID_PROPERTY: i64 = 151;
    /// The SMS could not be routed.
    pub const SMS_ROUTING: i64 = 1000;
}

/// A JSON-RPC error object.
#[derive(Debug, Clone)]
pub struct RpcError {
    /// Numeric code.
    pub code: i64,
    /// Text.
    pub message: String,
    /// Extra data (null when none).
    pub data: Value,
}

impl RpcError {
    /// An error with no data.
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            data: Value::Null,
        }
    }

    /// Invalid parameter at `index` (0-based) of the positional list.
    pub fn invalid_param(index: usize, message: impl Into<String>) -> Self {
        Self::new(
            codes::INVALID_PROPERTY,
            format!("param {index}: {}", message.into()),
        )
    }
}

impl From<ApiError> for RpcError {
    fn from(e: ApiError) -> Self {
        let code = match e.code {
            "auth_error" => codes::AUTH,
            "not_found" => codes::NOT_FOUND,
            "validation_error" if e.details.iter().all(|d| d.message == "is required") => {
                codes::MISSING_PROPERTY
            }
            "validation_error"
            | "invalid_scenario"
            | "reservation_exists"
            | "reservation_expired"
            | "export_range_too_long"
            | "task_not_cancellable"
            | "end_user_in_use"
            | "unsupported_format"
            | "file_too_large"
            | "number_not_available"
            | "login_as_invalid" => codes::INVALID_PROPERTY,
            "account_suspended"
            | "forbidden"
            | "sender_not_approved"
            | "insufficient_credit"
            | "rate_limited"
            | "export_quota_exceeded"
            | "quota_exceeded"
            | "login_as_refused" => codes::NOT_ALLOWED,
            _ => codes::INTERNAL,
        };
        let data = if e.details.is_empty() {
            json!({ "code": e.code })
        } else {
            json!({ "code": e.code, "details": e.details })
        };
        Self {
            code,
            message: e.message,
            data,
        }
    }
}

impl From<dialtone_store::DbError> for RpcError {
    fn from(e: dialtone_store::DbError) -> Self {
        ApiError::from(e).into()
    }
}

/// What a method receives.
pub struct Call<'a> {
    /// Shared state.
    pub state: &'a AppState,
    /// The authenticated account.
    pub caller: &'a LegacyCaller,
    /// Positional parameters.
    pub params: Vec<Value>,
}

impl Call<'_> {
    /// Parameter `i`, or Null when absent.
    pub fn param(&self, i: usize) -> &Value {
        self.params.get(i).unwrap_or(&Value::Null)
    }

    /// A required string parameter.
    pub fn string(&self, i: usize, name: &str) -> Result<String, RpcError> {
        match self.param(i) {
            Value::String(s) => Ok(s.clone()),
            Value::Null => Err(RpcError::new(
                codes::MISSING_PROPERTY,
                format!("param {i} ({name}) is required"),
            )),
            _ => Err(RpcError::invalid_param(
                i,
                format!("{name} must be a string"),
            )),
        }
    }

    /// A required integer parameter, as a number or a string of digits.
    pub fn int(&self, i: usize, name: &str) -> Result<i64, RpcError> {
        match self.param(i) {
            Value::Null => Err(RpcError::new(
                codes::MISSING_PROPERTY,
                format!("param {i} ({name}) is required"),
            )),
            v => integer(v)
                .ok_or_else(|| RpcError::invalid_param(i, format!("{name} must be an integer"))),
        }
    }
}

/// An integer given as a JSON number or as a string of digits (the real service takes both,
/// and its example scripts pass command-line arguments through as strings).
pub fn integer(v: &Value) -> Option<i64> {
    match v {
        Value::Number(n) => n.as_i64(),
        Value::String(s) => {
            let digits = s.trim();
            let body = digits.strip_prefix('-').unwrap_or(digits);
            if body.is_empty() || body.len() > 18 || !body.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            digits.parse().ok()
        }
        _ => None,
    }
}

/// The integer `key` of an options object: `default` when absent or null, refused outside
/// `0..=max`.
pub fn int_option(v: &Value, key: &str, default: i64, max: i64) -> Result<i64, RpcError> {
    match v.get(key) {
        None | Some(Value::Null) => Ok(default),
        Some(n) => integer(n).filter(|n| (0..=max).contains(n)).ok_or_else(|| {
            RpcError::new(
                codes::INVALID_PROPERTY,
                format!("{key} must be an integer from 0 to {max}"),
            )
        }),
    }
}

/// `POST /json-rpc/v1.1/`.
pub fn router() -> Router<AppState> {
    Router::new().route("/json-rpc/v1.1/", post(handle))
}

fn answer(id: Value, outcome: Result<Value, RpcError>) -> Response {
    let body = match outcome {
        Ok(result) => json!({ "jsonrpc": "2.0", "id": id, "result": result }),
        Err(e) => {
            json!({ "jsonrpc": "2.0", "id": id, "error": { "code": e.code, "message": e.message, "data": e.data } })
        }
    };
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/json; charset=utf-8")],
        body.to_string(),
    )
        .into_response()
}

/// Authenticates from the headers first: an unauthenticated request's body is never read
/// (its answer's `id` is then null, as for a request whose id cannot be known).
async fn handle(State(state): State<AppState>, req: axum::extract::Request) -> Response {
    let (parts, body) = req.into_parts();
    let client = parts
        .extensions
        .get::<crate::http::client::ClientAddr>()
        .map(|c| c.0);
    let caller = match legacy_caller(&parts.headers, client, &state).await {
        Ok(c) => c,
        Err(e) if e.code == "auth_error" => {
            return answer(Value::Null, Err(RpcError::new(codes::AUTH, e.message)));
        }
        Err(e) => return answer(Value::Null, Err(e.into())),
    };
    let body: Bytes = match axum::body::to_bytes(body, state.config.max_body_bytes).await {
        Ok(b) => b,
        Err(e) => {
            return answer(
                Value::Null,
                Err(RpcError::new(
                    codes::PARSE_ERROR,
                    format!("parse error: the body could not be read ({e})"),
                )),
            );
        }
    };
    let request: Value = match serde_json::from_slice(&body) {
        Ok(v) => v,
        Err(e) => {
            return answer(
                Value::Null,
                Err(RpcError::new(
                    codes::PARSE_ERROR,
                    format!("parse error: {e}"),
                )),
            );
        }
    };
    let id = request.get("id").cloned().unwrap_or(Value::Null);
    let (method, params) = match parse_request(&request) {
        Ok(v) => v,
        Err(e) => return answer(id, Err(e)),
    };
    let call = Call {
        state: &state,
        caller: &caller,
        params,
    };
    answer(id, dispatch(&method, call).await)
}

fn parse_request(request: &Value) -> Result<(String, Vec<Value>), RpcError> {
    let invalid = |m: &str| RpcError::new(codes::INVALID_REQUEST, format!("invalid request: {m}"));
    let obj = request
        .as_object()
        .ok_or_else(|| invalid("not an object (batches are not supported)"))?;
    if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(invalid("jsonrpc must be \"2.0\""));
    }
    let method = obj
        .get("method")
        .and_then(Value::as_str)
        .ok_or_else(|| invalid("method must be a string"))?;
    let params = match obj.get("params") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items.clone(),
        Some(_) => {
            return Err(RpcError::new(
                codes::INVALID_PARAMS,
                "params must be an array: positional parameters only",
            ));
        }
    };
    Ok((method.to_owned(), params))
}

async fn dispatch(method: &str, call: Call<'_>) -> Result<Value, RpcError> {
    match method {
        "system.get_timestamp" => system::get_timestamp(&call),
        "sms.send" => sms::send(&call).await,
        "billing.get_prepaid_credit" => system::prepaid_credit(&call).await,
        "webhooks.subscribe" => webhooks::subscribe(&call).await,
        "webhooks.unsubscribe" => webhooks::unsubscribe(&call).await,
        "webhooks.get_list" => webhooks::get_list(&call).await,
        "webhooks.get_event_types" => webhooks::get_event_types(),
        "sms.get" => sms::get(&call).await,
        "sms.get_list" => sms::get_list(&call).await,
        "did.search" => did::search(&call).await,
        "did/areacode.countries" => did::countries(&call).await,
        "did/areacode.types" => did::types(&call).await,
        "did/areacode.get_list" => did::area_codes(&call).await,
        "did/store.reserve" => did::reserve(&call).await,
        "did/store.view_order" => did::view_order(&call).await,
        "did/store.buy_order" => did::buy_order(&call).await,
        "did/store.cancel_order" => did::cancel_order(&call).await,
        "did/store.cancel_subscription" => did::cancel_subscription(&call).await,
        "media/library.create" => media::create(&call).await,
        "media/library.get" => media::get(&call).await,
        "media/library.get_list" => media::get_list(&call).await,
        "media/library.set_name" => media::set_name(&call).await,
        "media/library.set_content" => media::set_content(&call).await,
        "media/library.delete" => media::delete(&call).await,
        "media/library.get_phone_id" => media::get_phone_id(&call).await,
        "media/library.search" => media::search(&call).await,
        "apps.create" => apps::create(&call).await,
        "apps.edit" => apps::edit(&call).await,
        "apps.delete" => apps::delete(&call).await,
        "apps.get" => apps::get(&call).await,
        "apps.get_list" => apps::get_list(&call).await,
        "apps.search" => apps::search(&call).await,
        "apps.assign_did" => apps::assign_did(&call).await,
        "apps.remove_did" => apps::remove_did(&call).await,
        "actions.start" => apps::start(&call).await,
        "jobs.get" => jobs::get(&call).await,
        "jobs.cancel" => jobs::cancel(&call).await,
        _ => Err(RpcError::new(
            codes::METHOD_NOT_FOUND,
            format!("method not found: {method}"),
        )),
    }
}
