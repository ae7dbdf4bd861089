//! Paged searches: one filtered `FROM ... WHERE ...`, counted and then read one page of.

use crate::sql::{Conn, DbError, Dialect, Row, SqlBuilder};

/// How a search is sorted and which page is read.
#[derive(Debug, Clone, Copy)]
pub struct Paging {
    /// Column (or expression) to sort by; ties are broken by the row id in the same direction.
    pub sort_column: &'static str,
    /// Newest or largest first.
    pub descending: bool,
    /// Rows to skip.
    pub offset: i64,
    /// Rows to return.
    pub limit: i64,
}

/// Runs `SELECT columns <filter> ORDER BY ... LIMIT ... OFFSET ...` and the matching count.
/// `filter` holds `FROM ... WHERE ...` with its parameters; `id_column` breaks ties.
pub fn page(
    conn: &mut dyn Conn,
    columns: &str,
    filter: &SqlBuilder,
    id_column: &str,
    paging: &Paging,
) -> Result<(i64, Vec<Row>), DbError> {
    let count_sql = format!("SELECT COUNT(*) {}", filter.sql());
    let total = conn.query_one(&count_sql, filter.params())?.int(0)?;
    if total <= paging.offset {
        return Ok((total, Vec::new()));
    }
    let dir = if paging.descending { "DESC" } else { "ASC" };
    let n = filter.params().len();
    let sql = format!(
        "SELECT {columns} {} ORDER BY {} {dir}, {id_column} {dir} LIMIT ${} OFFSET ${}",
        filter.sql(),
        paging.sort_column,
        n + 1,
        n + 2
    );
    let mut params = filter.params().to_vec();
    params.push(paging.limit.into());
    params.push(paging.offset.into());
    Ok((total, conn.query(&sql, &params)?))
}

/// Appends a case-insensitive "contains" condition on `column` (LIKE wildcards in the
/// user's text are matched literally).
pub fn push_contains(b: &mut SqlBuilder, dialect: Dialect, column: &str, text: &str) {
    let escaped: String = text
        .chars()
        .flat_map(|c| match c {
            '%' | '_' | '\\' => vec!['\\', c],
            c => vec![c],
        })
        .collect();
    let op = match dialect {
        Dialect::Sqlite => "LIKE",
        Dialect::Postgres => "ILIKE",
    };
    b.push(&format!(" AND {column} {op} "));
    b.bind(format!("%{escaped}%"));
    b.push(" ESCAPE '\\'");
}

/// Where a newest-first list goes on: after the row last seen, `(time, id)` (time is 0 for
/// lists ordered by id alone). No count, no offset: a page costs the same at any depth.
#[derive(Debug, Clone, Copy)]
pub struct Keyset {
    /// The last row seen; None for the first page.
    pub after: Option<(i64, i64)>,
    /// Rows to return.
    pub limit: i64,
}

/// Runs `SELECT columns <filter>` newest first, by `time_column` then `id_column` (by
/// `id_column` alone without a time column), from after the keyset's row. The conditions
/// are written so both databases range-scan an index ending in (time, id) or (id).
pub fn newest_first(
    conn: &mut dyn Conn,
    columns: &str,
    filter: &SqlBuilder,
    time_column: Option<&str>,
    id_column: &str,
    keyset: &Keyset,
) -> Result<Vec<Row>, DbError> {
    let mut params = filter.params().to_vec();
    let mut sql = format!("SELECT {columns} {}", filter.sql());
    if let Some((time, id)) = keyset.after {
        let n = params.len();
        match time_column {
            Some(t) => {
                sql.push_str(&format!(
                    " AND {t} <= ${a} AND ({t} < ${a} OR {id_column} < ${b})",
                    a = n + 1,
                    b = n + 2
                ));
                params.push(time.into());
                params.push(id.into());
            }
            None => {
                sql.push_str(&format!(" AND {id_column} < ${}", n + 1));
                params.push(id.into());
            }
        }
    }
    match time_column {
        Some(t) => sql.push_str(&format!(" ORDER BY {t} DESC, {id_column} DESC")),
        None => sql.push_str(&format!(" ORDER BY {id_column} DESC")),
    }
    sql.push_str(&format!(" LIMIT {}", keyset.limit.clamp(1, 500)));
    conn.query(&sql, &params)
}
