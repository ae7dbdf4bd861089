//! The earlier SMS REST interface at `/rest/v1.1`: `GET /sms`, `POST /sms`, `GET /sms/send`,
//! `GET /sms/{hash}`. Success is `{"status":"success","data":...}`; failure carries the HTTP
//! status and `{"status":"error","data":{"code":N,"message":"..."}}`.

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use dialtone_domain::sms::{Sender, TrafficType};
use dialtone_domain::{E164, Sid, Timestamp};
use dialtone_store::sms::{self as store, SmsFilter};
use serde_json::{Map, Value, json};

use crate::error::{AppError, ErrorCode};
use crate::http::auth::{LegacyCaller, legacy_caller};
use crate::http::client::Client;
use crate::sms::{self, Outgoing, legacy};
use crate::state::AppState;

/// The SMS REST v1.1 routes.
pub(crate) fn router() -> Router<AppState> {
    Router::new()
        .route("/rest/v1.1/sms", get(list).post(send_json))
        .route("/rest/v1.1/sms/send", get(send_query))
        .route("/rest/v1.1/sms/{hash}", get(one))
}

/// An answer of this interface.
struct Answer(Result<Value, AppError>);

impl IntoResponse for Answer {
    fn into_response(self) -> Response {
        match self.0 {
            Ok(data) => (
                StatusCode::OK,
                axum::Json(json!({"status": "success", "data": data})),
            )
                .into_response(),
            Err(e) => {
                e.log_cause();
                let status = crate::http::error::status(e.code);
                let mut response = (
                    status,
                    axum::Json(json!({"status": "error", "data": {"code": status.as_u16(), "message": e.message}})),
                )
                    .into_response();
                if let Some(secs) = e.retry_after {
                    response
                        .headers_mut()
                        .insert(axum::http::header::RETRY_AFTER, secs.into());
                }
                response
            }
        }
    }
}

async fn caller(
    headers: &HeaderMap,
    client: Client,
    state: &AppState,
) -> Result<LegacyCaller, AppError> {
    legacy_caller(headers, client.0, state).await
}

fn bad(param: &str, message: impl Into<String>) -> AppError {
    AppError::invalid(param, format!("{param} {}", message.into()))
}

/// Sends from the fields of a JSON body or a query string (options as `options.key`).
async fn send_fields(
    state: &AppState,
    caller: &LegacyCaller,
    fields: &Map<String, Value>,
) -> Result<Value, AppError> {
    for k in fields.keys() {
        if !matches!(k.as_str(), "from" | "to" | "body" | "options") {
            return Err(bad(k, "is not a parameter of this method"));
        }
    }
    let text = |k: &str| fields.get(k).and_then(Value::as_str).map(str::to_owned);
    let from = Sender::parse(&text("from").unwrap_or_default()).map_err(|m| bad("from", m))?;
    let to = text("to").ok_or_else(|| bad("to", "is required"))?;
    let to = E164::parse(&to).map_err(|e| bad("to", e.to_string()))?;
    let body = text("body").ok_or_else(|| bad("body", "is required"))?;
    let options = legacy::parse_options(fields.get("options").unwrap_or(&Value::Null))
        .map_err(|(p, m)| bad(&p, m))?;
    let out = Outgoing {
        to,
        from,
        body,
        encoding: options.encoding,
        traffic_type: options.traffic_type.unwrap_or(TrafficType::Marketing),
        user_data: options.user_data,
        flash: options.flash,
        webhook_url: options.webhook_url,
        replace_stopnum: true,
    };
    let sent = sms::send(state, &caller.account, out).await?;
    Ok(Value::String(sent.sid.to_hash()))
}

/// Authenticates first: an unauthenticated request's body is never read.
async fn send_json(
    State(state): State<AppState>,
    headers: HeaderMap,
    client: Client,
    body: axum::body::Body,
) -> Answer {
    Answer(
        async {
            let caller = caller(&headers, client, &state).await?;
            let body: Bytes = axum::body::to_bytes(body, state.config.max_body_bytes)
                .await
                .map_err(|e| {
                    AppError::new(
                        ErrorCode::InvalidJson,
                        format!("the body could not be read: {e}"),
                    )
                })?;
            let v: Value = serde_json::from_slice(&body).map_err(|e| {
                AppError::new(
                    ErrorCode::InvalidJson,
                    format!("the body is not valid JSON: {e}"),
                )
            })?;
            let fields = v.as_object().ok_or_else(|| {
                AppError::new(ErrorCode::InvalidJson, "the body must be a JSON object")
            })?;
            send_fields(&state, &caller, fields).await
        }
        .await,
    )
}

async fn send_query(
    State(state): State<AppState>,
    headers: HeaderMap,
    client: Client,
    RawQuery(raw): RawQuery,
) -> Answer {
    Answer(
        async {
            let caller = caller(&headers, client, &state).await?;
            let mut fields = Map::new();
            let mut options = Map::new();
            for (k, v) in form_urlencoded::parse(raw.unwrap_or_default().as_bytes()) {
                if let Some(opt) = k.strip_prefix("options.") {
                    let value = match (opt, v.as_ref()) {
                        ("flash_message", "true" | "1") => Value::Bool(true),
                        ("flash_message", "false" | "0") => Value::Bool(false),
                        (o, s) if o.starts_with("webhook.") => {
                            let mut w = Map::new();
                            w.insert(
                                o.trim_start_matches("webhook.").to_owned(),
                                Value::String(s.to_owned()),
                            );
                            options.insert("webhook".to_owned(), Value::Object(w));
                            continue;
                        }
                        (_, s) => Value::String(s.to_owned()),
                    };
                    options.insert(opt.to_owned(), value);
                } else {
                    fields.insert(k.into_owned(), Value::String(v.into_owned()));
                }
            }
            if !options.is_empty() {
                fields.insert("options".to_owned(), Value::Object(options));
            }
            send_fields(&state, &caller, &fields).await
        }
        .await,
    )
}

async fn list(
    State(state): State<AppState>,
    headers: HeaderMap,
    client: Client,
    RawQuery(raw): RawQuery,
) -> Answer {
    Answer(
        async {
            let caller = caller(&headers, client, &state).await?;
            let mut filter = SmsFilter {
                direction: "outbound".to_owned(),
                ..SmsFilter::default()
            };
            for (k, v) in form_urlencoded::parse(raw.unwrap_or_default().as_bytes()) {
                match k.as_ref() {
                    "type" => {
                        filter.direction = match v.as_ref() {
                            "IN" => "inbound",
                            "OUT" => "outbound",
                            _ => return Err(bad("type", "must be IN or OUT")),
                        }
                        .to_owned();
                    }
                    "from" => {
                        filter.created_after = Some(
                            Timestamp::parse_legacy(&v)
                                .map_err(|_| bad("from", "must be YYYY-MM-DD HH:MM:SS"))?,
                        )
                    }
                    "to" => {
                        filter.created_before = Some(
                            Timestamp::parse_legacy(&v)
                                .map_err(|_| bad("to", "must be YYYY-MM-DD HH:MM:SS"))?,
                        )
                    }
                    other => return Err(bad(other, "is not a parameter of this method")),
                }
            }
            crate::jsonrpc::sms::list(&state, &caller.account, filter)
                .await
                .map_err(|e| AppError::internal(e.message))
        }
        .await,
    )
}

async fn one(
    State(state): State<AppState>,
    headers: HeaderMap,
    client: Client,
    Path(hash): Path<String>,
) -> Answer {
    Answer(
        async {
            let caller = caller(&headers, client, &state).await?;
            let sid = Sid::parse(&hash).ok_or_else(|| AppError::not_found("SMS"))?;
            let account = caller.account.clone();
            let now = state.clock.now();
            state
                .store
                .read(move |c| {
                    let Some(s) = store::get(c, account.id, &sid, now)? else {
                        return Ok(None);
                    };
                    Ok::<_, AppError>(Some(legacy::sms_object(&s, account.billing_mode.as_str())))
                })
                .await?
                .ok_or_else(|| AppError::not_found("SMS"))
        }
        .await,
    )
}
