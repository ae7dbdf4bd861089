//! Owned numbers: `GET /numbers`, `GET/PATCH/DELETE /numbers/{number}`, and the scenario and
//! end-user attachment paths.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use dialtone_domain::number::{NumberClass, NumberType, is_number_pattern};
use dialtone_domain::{E164, Sid};
use dialtone_store::numbers::{Number, owned};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::common::{SortOrder, path_sid, search_page};
use crate::error::{AppError, AppResult};
use crate::http::auth::Caller;
use crate::http::extract::{Checks, JsonBody, QueryString, nullable};
use crate::http::search::{SearchResult, page};
use crate::numbers;
use crate::state::AppState;

/// A link to another resource: its sid and name.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct Link {
    /// Identifier.
    pub sid: String,
    /// Name.
    pub name: String,
}

/// A phone number of the account.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct NumberView {
    /// The number, E.164.
    #[schema(example = "+447700900123")]
    pub e164: String,
    /// ISO 3166 country.
    pub country: String,
    /// `classic` or `gold`.
    pub class: String,
    /// Line type, such as `geographic` or `mobile`.
    #[serde(rename = "type")]
    pub number_type: String,
    /// When it was bought.
    pub assigned: Option<String>,
    /// The attached scenario.
    pub scenario: Option<Link>,
    /// The assigned end user.
    pub end_user: Option<Link>,
    /// Monthly price in cents.
    pub monthly_price: String,
}

impl From<Number> for NumberView {
    fn from(v: Number) -> Self {
        (&v).into()
    }
}

impl From<&Number> for NumberView {
    fn from(n: &Number) -> Self {
        let link = |l: &Option<(Sid, String)>| {
            l.as_ref().map(|(sid, name)| Link {
                sid: sid.to_string(),
                name: name.clone(),
            })
        };
        Self {
            e164: n.e164.clone(),
            country: n.country.clone(),
            class: n.class.clone(),
            number_type: n.number_type.clone(),
            assigned: n.assigned.map(|t| t.to_rfc3339()),
            scenario: link(&n.scenario),
            end_user: link(&n.end_user),
            monthly_price: n.monthly_price.to_cents_string(),
        }
    }
}

/// Sort keys of numbers.
#[allow(
    dead_code,
    reason = "a shape of the OpenAPI document only: the values are read as text and checked by the handler"
)]
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum NumberSort {
    /// By purchase time (default).
    Assigned,
    /// By the number.
    E164,
}

/// Filters of `GET /numbers`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct NumberQuery {
    /// Numbers attached to this scenario.
    #[param(value_type = Option<String>, pattern = "^[0-9a-z]{8}$")]
    sid: Option<String>,
    /// `classic` or `gold`.
    class: Option<String>,
    /// Line type.
    #[serde(rename = "type")]
    #[param(rename = "type")]
    number_type: Option<String>,
    /// Digits the number contains.
    #[param(pattern = r"^(\+[1-9])?[0-9]{1,32}$")]
    contains: Option<String>,
    /// Only `true`: numbers attached to no scenario.
    detached: Option<String>,
    /// Sort key (default `assigned`).
    #[param(value_type = Option<NumberSort>)]
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

/// Attachment changes of `PATCH /numbers/{number}`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct NumberPatch {
    /// Scenario sid to attach, or null to detach.
    #[serde(default, deserialize_with = "nullable")]
    #[schema(value_type = Option<String>, pattern = "^[0-9a-z]{8}$")]
    scenario: Option<Option<String>>,
    /// End user sid to assign, or null to unassign.
    #[serde(default, deserialize_with = "nullable")]
    #[schema(value_type = Option<String>, pattern = "^[0-9a-z]{8}$")]
    end_user: Option<Option<String>>,
}

#[derive(Clone, Copy)]
enum Sort {
    Assigned,
    E164,
}

/// A number from a path: anything that is not E.164 names no number.
pub(crate) fn path_number(text: &str) -> AppResult<String> {
    E164::parse_format(text)
        .map(|n| n.as_str().to_owned())
        .map_err(|_| AppError::not_found("number"))
}

/// Search the account's numbers.
#[utoipa::path(get, path = "/numbers", tag = "Phone numbers", params(NumberQuery),
    responses((status = 200, description = "a page of numbers", body = SearchResult<NumberView>)))]
pub(crate) async fn search(
    State(state): State<AppState>,
    caller: Caller,
    QueryString(q): QueryString<NumberQuery>,
) -> AppResult<Json<SearchResult<NumberView>>> {
    let mut checks = Checks::default();
    let scenario = checks.sid("sid", q.sid.as_deref());
    let classes: Vec<_> = NumberClass::ALL.iter().map(|c| (c.as_str(), *c)).collect();
    let class = checks.choice("class", q.class.as_deref(), &classes);
    let types: Vec<_> = NumberType::ALL.iter().map(|t| (t.as_str(), *t)).collect();
    let number_type = checks.choice("type", q.number_type.as_deref(), &types);
    if let Some(c) = &q.contains
        && !is_number_pattern(c)
    {
        checks.fail("contains", r"must match ^(\+[1-9])?[0-9]{1,32}$");
    }
    let detached = checks
        .choice("detached", q.detached.as_deref(), &[("true", true)])
        .unwrap_or(false);
    let page = page(
        &mut checks,
        q.sort.as_deref(),
        &[("assigned", Sort::Assigned), ("e164", Sort::E164)],
        Sort::Assigned,
        q.order.as_deref(),
        q.offset.as_deref(),
        q.limit.as_deref(),
    );
    checks.finish()?;
    let filter = owned::OwnedFilter {
        scenario,
        class: class.map(|c| c.as_str().to_owned()),
        number_type: number_type.map(|t| t.as_str().to_owned()),
        contains: q.contains,
        detached,
    };
    let column = |s| match s {
        Sort::Assigned => "n.assigned",
        Sort::E164 => "n.e164",
    };
    let account = caller.account.id;
    search_page(&state, &page, column, move |c, paging| {
        owned::search(c, account, &filter, paging)
    })
    .await
}

/// Get one of the account's numbers.
#[utoipa::path(get, path = "/numbers/{number}", tag = "Phone numbers", params(("number" = String, Path, description = "E.164 number")),
    responses((status = 200, description = "the number", body = NumberView)))]
pub(crate) async fn get(
    State(state): State<AppState>,
    caller: Caller,
    Path(number): Path<String>,
) -> AppResult<Json<NumberView>> {
    let e164 = path_number(&number)?;
    let account = caller.account.id;
    let n = state
        .store
        .read(move |c| owned::get(c, account, &e164))
        .await?
        .ok_or_else(|| AppError::not_found("number"))?;
    Ok(Json((&n).into()))
}

/// Attach the number to a scenario or change its end user.
#[utoipa::path(patch, path = "/numbers/{number}", tag = "Phone numbers", params(("number" = String, Path, description = "E.164 number")),
    request_body = NumberPatch, responses((status = 204, description = "updated")))]
pub(crate) async fn update(
    State(state): State<AppState>,
    caller: Caller,
    Path(number): Path<String>,
    JsonBody(patch): JsonBody<NumberPatch>,
) -> AppResult<StatusCode> {
    let e164 = path_number(&number)?;
    let mut checks = Checks::default();
    let scenario = patch
        .scenario
        .map(|s| s.and_then(|s| checks.sid("scenario", Some(&s))));
    let end_user = patch
        .end_user
        .map(|u| u.and_then(|u| checks.sid("endUser", Some(&u))));
    checks.finish()?;
    numbers::attach(&state, caller.account.id, e164, scenario, end_user).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Release the number (ends its subscription at once).
#[utoipa::path(delete, path = "/numbers/{number}", tag = "Phone numbers", params(("number" = String, Path, description = "E.164 number")),
    responses((status = 204, description = "released")))]
pub(crate) async fn release(
    State(state): State<AppState>,
    caller: Caller,
    Path(number): Path<String>,
) -> AppResult<StatusCode> {
    let e164 = path_number(&number)?;
    numbers::release(&state, caller.account.id, e164).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Attach the number to a scenario.
#[utoipa::path(put, path = "/numbers/{number}/scenario/{sid}", tag = "Phone numbers",
    params(("number" = String, Path, description = "E.164 number"), ("sid" = String, Path, description = "scenario sid")),
    responses((status = 204, description = "attached")))]
pub(crate) async fn attach_scenario(
    State(state): State<AppState>,
    caller: Caller,
    Path((number, sid)): Path<(String, String)>,
) -> AppResult<StatusCode> {
    let e164 = path_number(&number)?;
    let sid = path_sid(&sid, "scenario")?;
    numbers::attach(&state, caller.account.id, e164, Some(Some(sid)), None).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Detach the number from its scenario.
#[utoipa::path(delete, path = "/numbers/{number}/scenario", tag = "Phone numbers",
    params(("number" = String, Path, description = "E.164 number")), responses((status = 204, description = "detached")))]
pub(crate) async fn detach_scenario(
    State(state): State<AppState>,
    caller: Caller,
    Path(number): Path<String>,
) -> AppResult<StatusCode> {
    let e164 = path_number(&number)?;
    numbers::attach(&state, caller.account.id, e164, Some(None), None).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Assign the number to an end user.
#[utoipa::path(put, path = "/numbers/{number}/enduser/{sid}", tag = "Phone numbers",
    params(("number" = String, Path, description = "E.164 number"), ("sid" = String, Path, description = "end user sid")),
    responses((status = 204, description = "assigned")))]
pub(crate) async fn assign_end_user(
    State(state): State<AppState>,
    caller: Caller,
    Path((number, sid)): Path<(String, String)>,
) -> AppResult<StatusCode> {
    let e164 = path_number(&number)?;
    let sid = path_sid(&sid, "end user")?;
    numbers::attach(&state, caller.account.id, e164, None, Some(Some(sid))).await?;
    Ok(StatusCode::NO_CONTENT)
}
