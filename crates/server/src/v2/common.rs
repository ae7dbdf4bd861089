//! Pieces several v2.0 resources share: path sids, documented search controls.

use dialtone_domain::Sid;
use serde::Serialize;

use crate::http::error::{ApiError, ApiResult};

/// A sid from a path: anything that is not a well-formed sid names no resource (404).
pub fn path_sid(text: &str, what: &str) -> ApiResult<Sid> {
    Sid::parse(text)
        .filter(|s| s.as_str() == text)
        .ok_or_else(|| ApiError::not_found(what))
}

/// Sort direction, for the OpenAPI document.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum SortOrder {
    /// Ascending.
    Asc,
    /// Descending (default).
    Desc,
}

/// Sort keys of searches sorted by name, creation or update.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum NameCreatedUpdated {
    /// By name.
    Name,
    /// By creation time.
    Created,
    /// By last update (default).
    Updated,
}

/// Converts validated controls to the store's paging, given the column of each sort key.
pub fn paging<S: Copy>(
    page: &crate::http::search::Page<S>,
    column: impl Fn(S) -> &'static str,
) -> dialtone_store::search::Paging {
    dialtone_store::search::Paging {
        sort_column: column(page.sort),
        descending: page.order == crate::http::search::Order::Desc,
        offset: page.offset,
        limit: page.limit,
    }
}

/// `^[0-9a-z]{8}$`: the form of every sid.
pub const SID_PATTERN: &str = "^[0-9a-z]{8}$";
