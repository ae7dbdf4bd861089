//! The earlier JSON-RPC 2.0 interface at `POST /json-rpc/v1.1/`: positional parameters only,
//! HTTP 200 for every answer (the official SDKs treat any other status as a transport
//! failure), errors as `{code, message, data}` with the earlier numeric codes.

mod apps;
pub(crate) mod call;
mod did;
pub(crate) mod error;
mod jobs;
mod media;
pub(crate) mod sms;
mod system;
mod webhooks;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};

use crate::error::ErrorCode;
use crate::http::auth::legacy_caller;
use crate::state::AppState;

use call::Call;
use error::{RpcError, codes};

/// `POST /json-rpc/v1.1/`.
pub(crate) fn router() -> Router<AppState> {
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
        Err(e) if e.code == ErrorCode::AuthError => {
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
        "media/tts.get_voice_list" => media::tts_voices(&call).await,
        "media/tts.set_content" => media::tts_set_content(&call).await,
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
