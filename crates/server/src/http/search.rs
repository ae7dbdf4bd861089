//! The search controls every list endpoint shares (`sort`, `order`, `offset`, `limit`) and
//! the result envelope `{offset, total, hasMore, hits}`.

use serde::Serialize;

use super::extract::Checks;

/// Sort direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Order {
    /// Oldest or smallest first.
    Asc,
    /// Newest or largest first (the default).
    Desc,
}

/// Validated search controls; `S` is the endpoint's sort key.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Page<S> {
    /// Sort key.
    pub sort: S,
    /// Direction.
    pub order: Order,
    /// Hits to skip.
    pub offset: i64,
    /// Hits to return (1 to 100).
    pub limit: i64,
}

/// Largest `offset` accepted (beyond it a search would only scan to return nothing).
pub(crate) const MAX_OFFSET: i64 = 1_000_000_000;

/// Validates the four controls; `sorts` lists the endpoint's sort keys, `default_sort` first
/// if absent.
pub(crate) fn page<S: Copy>(
    checks: &mut Checks,
    sort: Option<&str>,
    sorts: &[(&str, S)],
    default_sort: S,
    order: Option<&str>,
    offset: Option<&str>,
    limit: Option<&str>,
) -> Page<S> {
    Page {
        sort: checks.choice("sort", sort, sorts).unwrap_or(default_sort),
        order: checks
            .choice(
                "order",
                order,
                &[("asc", Order::Asc), ("desc", Order::Desc)],
            )
            .unwrap_or(Order::Desc),
        offset: checks.int("offset", offset, 0, MAX_OFFSET).unwrap_or(0),
        limit: checks.int("limit", limit, 1, 100).unwrap_or(10),
    }
}

/// A page of search results.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SearchResult<T> {
    /// The offset asked for.
    pub offset: i64,
    /// How many items match in all.
    pub total: i64,
    /// Whether items follow this page.
    pub has_more: bool,
    /// This page's items.
    pub hits: Vec<T>,
}

impl<T> SearchResult<T> {
    /// Wraps a page of hits.
    pub(crate) fn new<S>(page: &Page<S>, total: i64, hits: Vec<T>) -> Self {
        Self {
            offset: page.offset,
            total,
            has_more: page.offset + (hits.len() as i64) < total,
            hits,
        }
    }
}
