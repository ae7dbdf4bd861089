//! Webhooks: `GET/POST /webhooks`, `GET/PATCH/DELETE /webhooks/{sid}`,
//! `GET /webhooks/{sid}/deliveries`.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use dialtone_store::deliveries::{self, AttemptView};
use dialtone_store::webhooks::{self as store, Webhook, WebhookFilter};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};

use super::common::{SortOrder, by_sid, paging, path_sid, search_page};
use crate::error::{AppError, AppResult};
use crate::http::auth::Caller;
use crate::http::extract::{Checks, JsonBody, QueryString};
use crate::http::search::{SearchResult, page};
use crate::state::AppState;
use crate::webhooks::{self, EVENT_TYPES};

/// Signing options as shown (the secret never is).
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct WebhookOptions {
    /// `SHA256` or `SHA512`.
    pub hmac_algo: String,
}

/// A webhook.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct WebhookView {
    /// Identifier.
    pub sid: String,
    /// Event name.
    #[serde(rename = "type")]
    pub event_type: String,
    /// Where events are POSTed.
    pub endpoint: String,
    /// `enabled` or `disabled`.
    pub status: String,
    /// Signing options.
    pub options: WebhookOptions,
    /// Creation time.
    pub created: String,
    /// Last change.
    pub updated: String,
}

impl From<Webhook> for WebhookView {
    fn from(v: Webhook) -> Self {
        (&v).into()
    }
}

impl From<&Webhook> for WebhookView {
    fn from(w: &Webhook) -> Self {
        Self {
            sid: w.sid.to_string(),
            event_type: w.event_type.clone(),
            endpoint: w.endpoint.clone(),
            status: w.status.clone(),
            options: WebhookOptions {
                hmac_algo: w.hmac_algo.clone(),
            },
            created: w.created.to_rfc3339(),
            updated: w.updated.to_rfc3339(),
        }
    }
}

/// Signing options of a create or update.
#[allow(
    dead_code,
    reason = "a shape of the OpenAPI document only: the values are read as text and checked by the handler"
)]
#[derive(Debug, Deserialize, ToSchema)]
pub(crate) struct SigningOptions {
    /// Secret keying the HMAC of each body (never shown again): 1 to 256 characters, or
    /// null to remove it.
    #[schema(min_length = 1, max_length = 256)]
    pub hmac_secret: Option<String>,
    /// `SHA256` (default) or `SHA512`.
    #[schema(value_type = Option<HmacAlgo>, nullable = false)]
    pub hmac_algo: Option<String>,
}

/// HMAC algorithms, for the document.
#[allow(
    dead_code,
    reason = "a shape of the OpenAPI document only: the values are read as text and checked by the handler"
)]
#[derive(Debug, Serialize, ToSchema)]
pub(crate) enum HmacAlgo {
    /// HMAC-SHA256.
    #[serde(rename = "SHA256")]
    Sha256,
    /// HMAC-SHA512.
    #[serde(rename = "SHA512")]
    Sha512,
}

/// Webhook statuses, for the document.
#[allow(
    dead_code,
    reason = "a shape of the OpenAPI document only: the values are read as text and checked by the handler"
)]
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum WebhookStatus {
    /// Events are delivered.
    Enabled,
    /// Events are not delivered.
    Disabled,
}

/// Body of `POST /webhooks`.
#[derive(Debug, Deserialize, ToSchema)]
pub(crate) struct CreateBody {
    /// Absolute http(s) URL (at most 2048 bytes; the pattern is the usual form, a host name
    /// with an optional port and path).
    #[schema(
        pattern = r"^[hH][tT][tT][pP][sS]?://[A-Za-z][A-Za-z0-9]*(\.[A-Za-z][A-Za-z0-9]*)*(:[1-9][0-9]{0,3})?(/[!-~]*)?$",
        max_length = 2048
    )]
    pub endpoint: String,
    /// Signing options.
    #[schema(value_type = Option<SigningOptions>)]
    pub options: Option<Value>,
}

/// Body of `PATCH /webhooks/{sid}` (the endpoint cannot change).
#[derive(Debug, Deserialize, ToSchema)]
pub(crate) struct UpdateBody {
    /// `enabled` or `disabled`.
    #[schema(value_type = Option<WebhookStatus>)]
    pub status: Option<String>,
    /// Signing options.
    #[schema(value_type = Option<SigningOptions>)]
    pub options: Option<Value>,
    /// Refused with 400 (the endpoint cannot change: create a new webhook instead), so not
    /// part of the document.
    #[schema(ignore)]
    pub endpoint: Option<Value>,
}

/// `type` of `POST /webhooks`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct TypeQuery {
    /// Event name, e.g. `sms.mo`.
    #[serde(rename = "type")]
    #[param(rename = "type", required = true)]
    event_type: Option<String>,
}

/// Filters of `GET /webhooks`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct SearchQuery {
    /// One webhook.
    #[param(pattern = "^[0-9a-z]{8}$")]
    sid: Option<String>,
    /// Event name.
    #[serde(rename = "type")]
    #[param(rename = "type")]
    event_type: Option<String>,
    /// `enabled` or `disabled`.
    #[param(value_type = Option<WebhookStatus>)]
    status: Option<String>,
    /// Only `created`.
    sort: Option<String>,
    /// Sort direction (default `desc`).
    #[param(value_type = Option<SortOrder>)]
    order: Option<String>,
    /// Hits to skip.
    #[param(value_type = Option<i64>, minimum = 0, maximum = 1000000000)]
    offset: Option<String>,
    /// Hits per page, 1 to 100 (default 10).
    #[param(value_type = Option<i64>, minimum = 1, maximum = 100)]
    limit: Option<String>,
}

/// Paging of `GET /webhooks/{sid}/deliveries`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct PageQuery {
    /// Sort direction (default `desc`: newest first).
    #[param(value_type = Option<SortOrder>)]
    order: Option<String>,
    /// Hits to skip.
    #[param(value_type = Option<i64>, minimum = 0, maximum = 1000000000)]
    offset: Option<String>,
    /// Hits per page, 1 to 100 (default 10).
    #[param(value_type = Option<i64>, minimum = 1, maximum = 100)]
    limit: Option<String>,
}

/// One try of a delivery.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct DeliveryView {
    /// Event id.
    pub event_id: String,
    /// Event name.
    #[serde(rename = "type")]
    pub event_type: String,
    /// Which try (0 first).
    #[serde(rename = "try")]
    pub try_number: i64,
    /// HTTP status received, if any.
    pub status_code: Option<i64>,
    /// How long it took.
    pub duration_ms: i64,
    /// Why it failed.
    pub error: Option<String>,
    /// When.
    pub at: String,
    /// The delivery now: `pending`, `delivered`, `dead` or `skipped`.
    pub delivery_status: String,
}

impl From<AttemptView> for DeliveryView {
    fn from(a: AttemptView) -> Self {
        Self {
            event_id: a.event_id,
            event_type: a.event_type,
            try_number: a.try_number,
            status_code: a.status_code,
            duration_ms: a.duration_ms,
            error: a.error,
            at: a.at.to_rfc3339(),
            delivery_status: a.delivery_status,
        }
    }
}

/// The signing options of a body. The contract (and the error message) counts the secret's
/// length in characters, 1 to 256; the shared parser counts bytes, so a secret valid by
/// characters is checked here and given to the parser as a placeholder.
fn signing(options: Option<&Value>) -> AppResult<webhooks::Signing> {
    let mut options = options.cloned().unwrap_or(Value::Null);
    let secret = match options.get("hmac_secret") {
        Some(Value::String(s)) if (1..=256).contains(&s.chars().count()) => Some(s.clone()),
        _ => None,
    };
    if let (Some(_), Some(map)) = (&secret, options.as_object_mut()) {
        map.insert("hmac_secret".into(), Value::String("x".into()));
    }
    let mut signing = webhooks::parse_signing(&options, "options.")?;
    if let Some(s) = secret {
        signing.secret = Some(Some(s));
    }
    Ok(signing)
}

/// Search webhooks.
#[utoipa::path(get, path = "/webhooks", tag = "Webhooks", params(SearchQuery),
    responses((status = 200, description = "a page of webhooks", body = SearchResult<WebhookView>)))]
pub(crate) async fn search(
    State(state): State<AppState>,
    caller: Caller,
    QueryString(q): QueryString<SearchQuery>,
) -> AppResult<Json<SearchResult<WebhookView>>> {
    let mut checks = Checks::default();
    let sid = checks.sid("sid", q.sid.as_deref());
    let types: Vec<(&str, &str)> = EVENT_TYPES.iter().map(|t| (*t, *t)).collect();
    let event_type = checks.choice("type", q.event_type.as_deref(), &types);
    let status = checks.choice(
        "status",
        q.status.as_deref(),
        &[("enabled", "enabled"), ("disabled", "disabled")],
    );
    let page = page(
        &mut checks,
        q.sort.as_deref(),
        &[("created", ())],
        (),
        q.order.as_deref(),
        q.offset.as_deref(),
        q.limit.as_deref(),
    );
    checks.finish()?;
    let filter = WebhookFilter {
        sid,
        event_type: event_type.map(str::to_owned),
        status: status.map(str::to_owned),
    };
    let account = caller.account.id;
    search_page(
        &state,
        &page,
        |()| "created",
        move |c, paging| store::search(c, account, &filter, paging),
    )
    .await
}

/// Subscribe to an event type.
#[utoipa::path(post, path = "/webhooks", tag = "Webhooks", params(TypeQuery), request_body = CreateBody,
    responses((status = 201, description = "created", body = WebhookView)))]
pub(crate) async fn create(
    State(state): State<AppState>,
    caller: Caller,
    QueryString(q): QueryString<TypeQuery>,
    JsonBody(b): JsonBody<CreateBody>,
) -> AppResult<(StatusCode, Json<WebhookView>)> {
    let event_type = q
        .event_type
        .ok_or_else(|| AppError::invalid("type", "is required"))?;
    webhooks::check_type(&event_type, "type")?;
    webhooks::check_endpoint(&b.endpoint, "endpoint")?;
    let signing = signing(b.options.as_ref())?;
    let w = webhooks::subscribe(&state, caller.account.id, event_type, b.endpoint, signing).await?;
    Ok((StatusCode::CREATED, Json((&w).into())))
}

/// Get a webhook.
#[utoipa::path(get, path = "/webhooks/{sid}", tag = "Webhooks", params(("sid" = String, Path, description = "webhook sid")),
    responses((status = 200, description = "the webhook", body = WebhookView)))]
pub(crate) async fn get(
    State(state): State<AppState>,
    caller: Caller,
    Path(sid): Path<String>,
) -> AppResult<Json<WebhookView>> {
    let w = by_sid(&state, caller.account.id, &sid, "webhook", store::get).await?;
    Ok(Json((&w).into()))
}

/// Enable, disable, or change the signing of a webhook.
#[utoipa::path(patch, path = "/webhooks/{sid}", tag = "Webhooks", params(("sid" = String, Path, description = "webhook sid")),
    request_body = UpdateBody, responses((status = 200, description = "the webhook", body = WebhookView)))]
pub(crate) async fn update(
    State(state): State<AppState>,
    caller: Caller,
    Path(sid): Path<String>,
    JsonBody(b): JsonBody<UpdateBody>,
) -> AppResult<Json<WebhookView>> {
    let sid = path_sid(&sid, "webhook")?;
    if b.endpoint.is_some() {
        return Err(AppError::invalid(
            "endpoint",
            "cannot be changed: create a new webhook instead",
        ));
    }
    let mut checks = Checks::default();
    let status = checks.choice(
        "status",
        b.status.as_deref(),
        &[("enabled", "enabled"), ("disabled", "disabled")],
    );
    checks.finish()?;
    let signing = signing(b.options.as_ref())?;
    let (account, now) = (caller.account.id, state.clock.now());
    let w = state
        .store
        .write(move |c| {
            let w = store::get(c, account, &sid)?.ok_or_else(|| AppError::not_found("webhook"))?;
            let secret = signing.secret.as_ref().map(|s| s.as_deref());
            store::update(c, w.id, status, secret, signing.algo.as_deref(), now)?;
            Ok::<_, AppError>(store::get(c, account, &sid)?.unwrap_or(w))
        })
        .await?;
    Ok(Json((&w).into()))
}

/// Delete a webhook.
#[utoipa::path(delete, path = "/webhooks/{sid}", tag = "Webhooks", params(("sid" = String, Path, description = "webhook sid")),
    responses((status = 204, description = "deleted")))]
pub(crate) async fn delete(
    State(state): State<AppState>,
    caller: Caller,
    Path(sid): Path<String>,
) -> AppResult<StatusCode> {
    let sid = path_sid(&sid, "webhook")?;
    webhooks::unsubscribe(&state, caller.account.id, sid).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// The delivery tries of a webhook, newest first.
#[utoipa::path(get, path = "/webhooks/{sid}/deliveries", tag = "Webhooks", params(("sid" = String, Path, description = "webhook sid"), PageQuery),
    responses((status = 200, description = "a page of tries", body = SearchResult<DeliveryView>)))]
pub(crate) async fn deliveries(
    State(state): State<AppState>,
    caller: Caller,
    Path(sid): Path<String>,
    QueryString(q): QueryString<PageQuery>,
) -> AppResult<Json<SearchResult<DeliveryView>>> {
    let sid = path_sid(&sid, "webhook")?;
    let mut checks = Checks::default();
    let page = page(
        &mut checks,
        None,
        &[("at", ())],
        (),
        q.order.as_deref(),
        q.offset.as_deref(),
        q.limit.as_deref(),
    );
    checks.finish()?;
    let paging = paging(&page, |()| "a.id");
    let account = caller.account.id;
    let (total, list) = state
        .store
        .read(move |c| {
            let w = store::get(c, account, &sid)?.ok_or_else(|| AppError::not_found("webhook"))?;
            Ok::<_, AppError>(deliveries::attempts(c, w.id, &paging)?)
        })
        .await?;
    Ok(Json(SearchResult::new(
        &page,
        total,
        list.into_iter().map(Into::into).collect(),
    )))
}
