//! SMS: `POST /sms` (send), `GET /sms` (search), `GET /sms/{sid}`.

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use dialtone_domain::sms::{Direction, Encoding, Sender, SmsStatus, TrafficType};
use dialtone_store::sms::{self as store, Sms, SmsFilter};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::common::{SortOrder, path_sid, search_page};
use crate::error::{AppError, AppResult};
use crate::http::auth::{Caller, SendCaller};
use crate::http::extract::{Checks, QueryString, json_body};
use crate::http::search::{SearchResult, page};
use crate::sms::{self, Outgoing};
use crate::state::AppState;

/// An SMS.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SmsView {
    /// Identifier.
    pub sid: String,
    /// `outbound` or `inbound`.
    pub direction: String,
    /// Sender.
    pub from: String,
    /// Recipient.
    pub to: String,
    /// Text.
    pub body: String,
    /// `gsm` or `unicode`.
    pub encoding: String,
    /// Number of parts.
    pub parts: i64,
    /// `marketing` or `alerting` (null for inbound).
    pub traffic_type: Option<String>,
    /// Status.
    pub status: String,
    /// Why it failed (empty otherwise).
    pub status_error: String,
    /// The customer's data.
    pub user_data: Option<String>,
    /// What it cost, in cents.
    pub billing_debit: String,
    /// Creation time.
    pub created: String,
    /// Last change.
    pub updated: String,
    /// When the carrier took it.
    pub sent_at: Option<String>,
    /// When it was delivered (or received).
    pub delivered_at: Option<String>,
}

impl From<Sms> for SmsView {
    fn from(v: Sms) -> Self {
        (&v).into()
    }
}

impl From<&Sms> for SmsView {
    fn from(s: &Sms) -> Self {
        Self {
            sid: s.sid.to_string(),
            direction: s.direction.clone(),
            from: s.from.clone(),
            to: s.to.clone(),
            body: s.body.clone(),
            encoding: s.encoding.clone(),
            parts: s.parts,
            traffic_type: s.traffic_type.clone(),
            status: s.status.clone(),
            status_error: s.status_error.clone(),
            user_data: s.user_data.clone(),
            billing_debit: s.billing_debit.to_cents_string(),
            created: s.created.to_rfc3339(),
            updated: s.updated.to_rfc3339(),
            sent_at: s.sent_at.map(|t| t.to_rfc3339()),
            delivered_at: s.delivered_at.map(|t| t.to_rfc3339()),
        }
    }
}

/// Query of `POST /sms`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SendQuery {
    /// Destination.
    /// Any E.164 number valid in its country's numbering plan is accepted (400 otherwise);
    /// no pattern can state the plans, so the pattern is the fictional drama range, always
    /// valid and routed by the simulated network.
    #[param(
        required = true,
        pattern = r"^\+447700900[0-9]{3}$",
        example = "+447700900123"
    )]
    to: Option<String>,
    /// Sender: empty (chosen from the destination), one of the account's numbers, or an
    /// alphanumeric sender of 1 to 11 letters, digits, spaces, dashes or underscores with
    /// at least one letter (the pattern asks for it first; numbers as for `to`).
    #[param(pattern = r"^(|[A-Za-z][A-Za-z0-9 _-]{0,10}|\+447700900[0-9]{3})$")]
    from: Option<String>,
    /// `gsm` or `unicode` (detected when absent).
    #[param(value_type = Option<EncodingWord>)]
    encoding: Option<String>,
    /// `marketing` (default) or `alerting`.
    #[param(value_type = Option<TrafficWord>)]
    traffic_type: Option<String>,
}

/// Encodings, for the document.
#[allow(
    dead_code,
    reason = "a shape of the OpenAPI document only: the values are read as text and checked by the handler"
)]
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum EncodingWord {
    /// GSM 03.38.
    Gsm,
    /// UCS-2.
    Unicode,
}

/// Traffic types, for the document.
#[allow(
    dead_code,
    reason = "a shape of the OpenAPI document only: the values are read as text and checked by the handler"
)]
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum TrafficWord {
    /// Promotional.
    Marketing,
    /// Transactional.
    Alerting,
}

/// A per-SMS webhook.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct SmsWebhook {
    /// Absolute http(s) URL receiving this SMS's status updates (at most 2048 bytes; the
    /// pattern is the usual form, a host name with an optional port and path).
    #[schema(
        pattern = r"^[hH][tT][tT][pP][sS]?://[A-Za-z][A-Za-z0-9]*(\.[A-Za-z][A-Za-z0-9]*)*(:[1-9][0-9]{0,3})?(/[!-~]*)?$",
        max_length = 2048
    )]
    pub endpoint: String,
}

/// Body of `POST /sms`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SendBody {
    /// The text.
    #[schema(min_length = 1)]
    pub body: String,
    /// Your own data, returned with the SMS (at most 255 characters).
    #[schema(max_length = 255)]
    pub user_data: Option<String>,
    /// Flash SMS (shown at once, not stored by the handset).
    pub flash: Option<bool>,
    /// Per-SMS webhook.
    pub webhook: Option<SmsWebhook>,
}

/// Send an SMS.
#[utoipa::path(post, path = "/sms", tag = "SMS", params(SendQuery), request_body = SendBody,
    responses((status = 202, description = "accepted", body = SmsView)))]
pub(crate) async fn send(
    State(state): State<AppState>,
    caller: SendCaller,
    headers: HeaderMap,
    QueryString(q): QueryString<SendQuery>,
    body: Bytes,
) -> AppResult<(StatusCode, Json<SmsView>)> {
    let b: SendBody = json_body(&body)?;
    let mut checks = Checks::default();
    let to = checks
        .required("to", q.to.as_deref())
        .and_then(|t| checks.phone("to", Some(t)));
    let from = match Sender::parse(q.from.as_deref().unwrap_or_default()) {
        Ok(s) => Some(s),
        Err(msg) => {
            checks.fail("from", msg);
            None
        }
    };
    let encoding = checks.choice(
        "encoding",
        q.encoding.as_deref(),
        &[("gsm", Encoding::Gsm), ("unicode", Encoding::Unicode)],
    );
    let traffic_type = checks
        .choice(
            "trafficType",
            q.traffic_type.as_deref(),
            &[
                ("marketing", TrafficType::Marketing),
                ("alerting", TrafficType::Alerting),
            ],
        )
        .unwrap_or(TrafficType::Marketing);
    if b.body.is_empty() {
        checks.fail("body", "must not be empty");
    }
    if let Some(u) = &b.user_data
        && u.chars().count() > 255
    {
        checks.fail("userData", "must be at most 255 characters");
    }
    let webhook_url = b
        .webhook
        .as_ref()
        .and_then(|w| checks.http_url("webhook.endpoint", Some(&w.endpoint)));
    checks.finish()?;
    let (Some(to), Some(from)) = (to, from) else {
        return Err(AppError::internal("validated parameters missing"));
    };
    let out = Outgoing {
        to,
        from,
        body: b.body,
        encoding,
        traffic_type,
        user_data: b.user_data,
        flash: b.flash.unwrap_or(false),
        webhook_url,
        replace_stopnum: false,
    };
    let sms = match caller.assumed {
        Some(version) => {
            match sms::send_assumed(&state, &caller.account, out.clone(), version).await? {
                Some(sms) => sms,
                // Authentication changed since the account was cached: read it again.
                None => {
                    let confirmed = caller.confirm(&state, &headers).await?;
                    sms::send(&state, &confirmed.account, out).await?
                }
            }
        }
        None => sms::send(&state, &caller.account, out).await?,
    };
    Ok((StatusCode::ACCEPTED, Json((&sms).into())))
}

/// Search filters of SMS.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SearchQuery {
    /// `inbound` or `outbound`.
    #[param(required = true, value_type = Option<DirectionWord>)]
    direction: Option<String>,
    /// Created at or after (RFC 3339).
    #[param(required = true, format = DateTime)]
    created_after: Option<String>,
    /// Created at or before (RFC 3339).
    #[param(required = true, format = DateTime)]
    created_before: Option<String>,
    /// Sender (1 to 16 characters).
    #[param(min_length = 1, max_length = 16)]
    from: Option<String>,
    /// Recipient.
    /// Any E.164 number valid in its country's numbering plan is accepted (400 otherwise);
    /// no pattern can state the plans, so the pattern is the fictional drama range, always
    /// valid and routed by the simulated network.
    #[param(pattern = r"^\+447700900[0-9]{3}$", example = "+447700900123")]
    to: Option<String>,
    /// Text the body contains (1 to 64 characters).
    #[param(min_length = 1, max_length = 64)]
    contains: Option<String>,
    /// `marketing` or `alerting`.
    #[param(value_type = Option<TrafficWord>)]
    traffic_type: Option<String>,
    /// Status.
    status: Option<String>,
    /// `created` (default) or `updated`.
    #[param(value_type = Option<SmsSort>)]
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

/// Directions, for the document.
#[allow(
    dead_code,
    reason = "a shape of the OpenAPI document only: the values are read as text and checked by the handler"
)]
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum DirectionWord {
    /// Received.
    Inbound,
    /// Sent.
    Outbound,
}

/// SMS sort keys, for the document.
#[allow(
    dead_code,
    reason = "a shape of the OpenAPI document only: the values are read as text and checked by the handler"
)]
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum SmsSort {
    /// Creation time (default).
    Created,
    /// Last change.
    Updated,
}

#[derive(Clone, Copy)]
enum Sort {
    Created,
    Updated,
}

/// Search SMS.
#[utoipa::path(get, path = "/sms", tag = "SMS", params(SearchQuery),
    responses((status = 200, description = "a page of SMS", body = SearchResult<SmsView>)))]
pub(crate) async fn search(
    State(state): State<AppState>,
    caller: Caller,
    QueryString(q): QueryString<SearchQuery>,
) -> AppResult<Json<SearchResult<SmsView>>> {
    let mut checks = Checks::default();
    let direction = checks.required("direction", q.direction.as_deref());
    let direction = checks.choice(
        "direction",
        direction,
        &[
            ("inbound", Direction::Inbound),
            ("outbound", Direction::Outbound),
        ],
    );
    let after = checks.required("createdAfter", q.created_after.as_deref());
    let after = checks.datetime("createdAfter", after);
    let before = checks.required("createdBefore", q.created_before.as_deref());
    let before = checks.datetime("createdBefore", before);
    if let Some(from) = &q.from
        && (from.is_empty() || from.chars().count() > 16)
    {
        checks.fail("from", "must be 1 to 16 characters");
    }
    let to = checks.phone("to", q.to.as_deref());
    let contains = checks
        .text("contains", q.contains.as_deref(), 1, 64)
        .map(str::to_owned);
    let traffic = checks.choice(
        "trafficType",
        q.traffic_type.as_deref(),
        &[("marketing", "marketing"), ("alerting", "alerting")],
    );
    let statuses: Vec<(&str, SmsStatus)> =
        SmsStatus::ALL.iter().map(|s| (s.as_str(), *s)).collect();
    let status = checks.choice("status", q.status.as_deref(), &statuses);
    let page = page(
        &mut checks,
        q.sort.as_deref(),
        &[("created", Sort::Created), ("updated", Sort::Updated)],
        Sort::Created,
        q.order.as_deref(),
        q.offset.as_deref(),
        q.limit.as_deref(),
    );
    checks.finish()?;
    let filter = SmsFilter {
        direction: direction.map_or("outbound", Direction::as_str).to_owned(),
        created_after: after,
        created_before: before,
        from: q.from,
        to: to.map(|t| t.as_str().to_owned()),
        contains,
        traffic_type: traffic.map(str::to_owned),
        status: status.map(|s| s.as_str().to_owned()),
    };
    let column = |s| match s {
        Sort::Created => "created",
        Sort::Updated => "updated",
    };
    let account = caller.account.id;
    let now = state.clock.now();
    search_page(&state, &page, column, move |c, paging| {
        store::search(c, account, &filter, paging, now)
    })
    .await
}

/// Get an SMS.
#[utoipa::path(get, path = "/sms/{sid}", tag = "SMS", params(("sid" = String, Path, description = "SMS sid")),
    responses((status = 200, description = "the SMS", body = SmsView)))]
pub(crate) async fn get(
    State(state): State<AppState>,
    caller: Caller,
    Path(sid): Path<String>,
) -> AppResult<Json<SmsView>> {
    let sid = path_sid(&sid, "SMS")?;
    let (account, now) = (caller.account.id, state.clock.now());
    let sms = state
        .store
        .read(move |c| store::get(c, account, &sid, now))
        .await?
        .ok_or_else(|| AppError::not_found("SMS"))?;
    Ok(Json((&sms).into()))
}
