//! End users: `GET/POST /end-users`, `GET/PATCH/DELETE /end-users/{sid}`.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use dialtone_store::end_users::{self, Deletion, EndUser};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::common::{NameCreatedUpdated, SortOrder, by_sid, path_sid, search_page};
use crate::error::{AppError, AppResult, ErrorCode};
use crate::http::auth::Caller;
use crate::http::extract::{Checks, JsonBody, QueryString};
use crate::http::search::{SearchResult, page};
use crate::state::AppState;

/// An end user.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct EndUserView {
    /// Identifier.
    #[schema(example = "abcdef12")]
    pub sid: String,
    /// Name.
    pub name: String,
    /// Creation time.
    pub created: String,
    /// Last change.
    pub updated: String,
}

impl From<EndUser> for EndUserView {
    fn from(u: EndUser) -> Self {
        Self {
            sid: u.sid.to_string(),
            name: u.name,
            created: u.created.to_rfc3339(),
            updated: u.updated.to_rfc3339(),
        }
    }
}

/// Create or update body of an end user.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct EndUserBody {
    /// Name, 1 to 64 characters.
    #[schema(min_length = 1, max_length = 64)]
    pub name: String,
}

/// Search filters of end users.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct EndUserQuery {
    /// Part of the name (at most 32 characters).
    #[param(max_length = 32)]
    name: Option<String>,
    /// Sort key (default `updated`).
    #[param(value_type = Option<NameCreatedUpdated>)]
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

#[derive(Clone, Copy)]
enum Sort {
    Name,
    Created,
    Updated,
}

fn valid_name(body: &EndUserBody) -> AppResult<String> {
    let mut checks = Checks::default();
    let name = checks
        .text("name", Some(&body.name), 1, 64)
        .map(str::to_owned);
    checks.finish()?;
    Ok(name.unwrap_or_default())
}

/// Search end users.
#[utoipa::path(get, path = "/end-users", tag = "End users", params(EndUserQuery),
    responses((status = 200, description = "a page of end users", body = SearchResult<EndUserView>)))]
pub(crate) async fn search(
    State(state): State<AppState>,
    caller: Caller,
    QueryString(q): QueryString<EndUserQuery>,
) -> AppResult<Json<SearchResult<EndUserView>>> {
    let mut checks = Checks::default();
    let name = checks
        .text("name", q.name.as_deref(), 0, 32)
        .map(str::to_owned);
    let page = page(
        &mut checks,
        q.sort.as_deref(),
        &[
            ("name", Sort::Name),
            ("created", Sort::Created),
            ("updated", Sort::Updated),
        ],
        Sort::Updated,
        q.order.as_deref(),
        q.offset.as_deref(),
        q.limit.as_deref(),
    );
    checks.finish()?;
    let account = caller.account.id;
    search_page(
        &state,
        &page,
        |s| match s {
            Sort::Name => "name",
            Sort::Created => "created",
            Sort::Updated => "updated",
        },
        move |c, paging| {
            end_users::search(
                c,
                account,
                name.as_deref().filter(|n| !n.is_empty()),
                paging,
            )
        },
    )
    .await
}

/// Create an end user.
#[utoipa::path(post, path = "/end-users", tag = "End users", request_body = EndUserBody,
    responses((status = 201, description = "created", body = EndUserView)))]
pub(crate) async fn create(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(body): JsonBody<EndUserBody>,
) -> AppResult<(StatusCode, Json<EndUserView>)> {
    let name = valid_name(&body)?;
    let (account, now) = (caller.account.id, state.clock.now());
    let user = state
        .store
        .write(move |c| end_users::create(c, account, &name, now))
        .await?;
    Ok((StatusCode::CREATED, Json(user.into())))
}

/// Get an end user.
#[utoipa::path(get, path = "/end-users/{sid}", tag = "End users", params(("sid" = String, Path, description = "end user sid")),
    responses((status = 200, description = "the end user", body = EndUserView)))]
pub(crate) async fn get(
    State(state): State<AppState>,
    caller: Caller,
    Path(sid): Path<String>,
) -> AppResult<Json<EndUserView>> {
    let user = by_sid(&state, caller.account.id, &sid, "end user", end_users::get).await?;
    Ok(Json(user.into()))
}

/// Rename an end user.
#[utoipa::path(patch, path = "/end-users/{sid}", tag = "End users", params(("sid" = String, Path, description = "end user sid")),
    request_body = EndUserBody, responses((status = 200, description = "the end user", body = EndUserView)))]
pub(crate) async fn update(
    State(state): State<AppState>,
    caller: Caller,
    Path(sid): Path<String>,
    JsonBody(body): JsonBody<EndUserBody>,
) -> AppResult<Json<EndUserView>> {
    let sid = path_sid(&sid, "end user")?;
    let name = valid_name(&body)?;
    let (account, now) = (caller.account.id, state.clock.now());
    let user = state
        .store
        .write(move |c| end_users::rename(c, account, &sid, &name, now))
        .await?
        .ok_or_else(|| AppError::not_found("end user"))?;
    Ok(Json(user.into()))
}

/// Delete an end user (refused while a phone number is assigned to it).
#[utoipa::path(delete, path = "/end-users/{sid}", tag = "End users", params(("sid" = String, Path, description = "end user sid")),
    responses((status = 204, description = "deleted")))]
pub(crate) async fn delete(
    State(state): State<AppState>,
    caller: Caller,
    Path(sid): Path<String>,
) -> AppResult<StatusCode> {
    let sid = path_sid(&sid, "end user")?;
    let account = caller.account.id;
    match state
        .store
        .write(move |c| end_users::delete(c, account, &sid))
        .await?
    {
        Deletion::Deleted => Ok(StatusCode::NO_CONTENT),
        Deletion::NotFound => Err(AppError::not_found("end user")),
        Deletion::InUse => Err(AppError::new(
            ErrorCode::EndUserInUse,
            "a phone number is assigned to this end user; reassign it first",
        )),
    }
}
