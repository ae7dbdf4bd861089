//! Pieces several v2.0 resources share: path sids, documented search controls.

use axum::Json;
use dialtone_domain::Sid;
use dialtone_store::search::Paging;
use dialtone_store::{Conn, DbError};
use serde::Serialize;

use crate::error::{AppError, AppResult};
use crate::http::search::{Page, SearchResult};
use crate::state::AppState;

/// A sid from a path: anything that is not a well-formed sid names no resource (404).
pub(crate) fn path_sid(text: &str, what: &str) -> AppResult<Sid> {
    Sid::parse(text)
        .filter(|s| s.as_str() == text)
        .ok_or_else(|| AppError::not_found(what))
}

/// Sort direction, for the OpenAPI document.
#[allow(
    dead_code,
    reason = "a shape of the OpenAPI document only: the values are read as text and checked by the handler"
)]
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum SortOrder {
    /// Ascending.
    Asc,
    /// Descending (default).
    Desc,
}

/// Sort keys of searches sorted by name, creation or update.
#[allow(
    dead_code,
    reason = "a shape of the OpenAPI document only: the values are read as text and checked by the handler"
)]
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum NameCreatedUpdated {
    /// By name.
    Name,
    /// By creation time.
    Created,
    /// By last update (default).
    Updated,
}

/// Converts validated controls to the store's paging, given the column of each sort key.
pub(crate) fn paging<S: Copy>(page: &Page<S>, column: impl Fn(S) -> &'static str) -> Paging {
    Paging {
        sort_column: column(page.sort),
        descending: page.order == crate::http::search::Order::Desc,
        offset: page.offset,
        limit: page.limit,
    }
}

/// `^[0-9a-z]{8}$`: the form of every sid.
pub(crate) const SID_PATTERN: &str = "^[0-9a-z]{8}$";

/// A store function reading one of an account's resources by sid.
pub(crate) type GetBySid<T> = fn(&mut dyn Conn, i64, &Sid) -> Result<Option<T>, DbError>;

/// One of the account's resources by the sid of the path: 404 `not_found` naming `what`
/// when the sid is malformed or the account has no such resource.
pub(crate) async fn by_sid<T: Send + 'static>(
    state: &AppState,
    account: i64,
    sid: &str,
    what: &'static str,
    get: GetBySid<T>,
) -> AppResult<T> {
    let sid = path_sid(sid, what)?;
    state
        .store
        .read(move |c| get(c, account, &sid))
        .await?
        .ok_or_else(|| AppError::not_found(what))
}

/// Runs a validated search: reads the page (`search` gets the paging) and wraps its hits,
/// each rendered, in the search envelope.
pub(crate) async fn search_page<S, F, R, V>(
    state: &AppState,
    page: &Page<S>,
    column: impl Fn(S) -> &'static str,
    search: F,
) -> AppResult<Json<SearchResult<V>>>
where
    S: Copy,
    F: FnOnce(&mut dyn Conn, &Paging) -> Result<(i64, Vec<R>), DbError> + Send + 'static,
    R: Into<V> + Send + 'static,
{
    let paging = paging(page, column);
    let (total, hits) = state.store.read(move |c| search(c, &paging)).await?;
    Ok(Json(SearchResult::new(
        page,
        total,
        hits.into_iter().map(Into::into).collect(),
    )))
}
