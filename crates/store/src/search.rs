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
    page_sorted_by(conn, columns, filter, id_column, paging, &|q| {
        q.push(paging.sort_column);
    })
}

/// [`page`] sorted by what `sort` appends (a column, or an expression of the rows with its
/// own bound values) instead of the paging's column: for a sort key that is not stored as it
/// reads.
pub fn page_sorted_by(
    conn: &mut dyn Conn,
    columns: &str,
    filter: &SqlBuilder,
    id_column: &str,
    paging: &Paging,
    sort: &dyn Fn(&mut SqlBuilder),
) -> Result<(i64, Vec<Row>), DbError> {
    let count_sql = format!("SELECT COUNT(*) {}", filter.sql());
    let total = conn.query_one(&count_sql, filter.params())?.int(0)?;
    if total <= paging.offset {
        return Ok((total, Vec::new()));
    }
    let dir = if paging.descending { "DESC" } else { "ASC" };
    let mut q = SqlBuilder::continuing(
        format!("SELECT {columns} {} ORDER BY ", filter.sql()),
        filter.params().to_vec(),
    );
    sort(&mut q);
    q.push(&format!(" {dir}, {id_column} {dir} LIMIT "))
        .bind(paging.limit)
        .push(" OFFSET ")
        .bind(paging.offset);
    Ok((total, conn.query(q.sql(), q.params())?))
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

/// The rows an unindexed filter reads at most for one page of a newest-first list: a page of
/// a rare match (a status no SMS has, a word no body holds) stops here instead of reading the
/// whole account, and says where it stopped so the next page goes on from there.
pub const SCAN_WINDOW: i64 = 20_000;

/// A newest-first page and, when it came back short because its scan window ended, the
/// position the scan reached: the next page starts after it.
#[derive(Debug)]
pub struct Scanned<R> {
    /// The matching rows, newest first.
    pub rows: Vec<R>,
    /// `(time, id)` of the last row the window read, when rows may remain past it.
    pub stopped_at: Option<(i64, i64)>,
}

impl<R> Scanned<R> {
    /// The same page with each row read into `T`.
    pub fn try_map<T, E>(self, f: impl FnMut(&R) -> Result<T, E>) -> Result<Scanned<T>, E> {
        Ok(Scanned {
            rows: self.rows.iter().map(f).collect::<Result<_, _>>()?,
            stopped_at: self.stopped_at,
        })
    }
}

/// Appends the keyset's "after this row" condition, then the order, to `sql`.
fn after_keyset(
    sql: &mut String,
    params: &mut Vec<crate::sql::Value>,
    time_column: Option<&str>,
    id_column: &str,
    keyset: &Keyset,
) {
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
}

fn newest_order(time_column: Option<&str>, id_column: &str) -> String {
    match time_column {
        Some(t) => format!(" ORDER BY {t} DESC, {id_column} DESC"),
        None => format!(" ORDER BY {id_column} DESC"),
    }
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
    after_keyset(&mut sql, &mut params, time_column, id_column, keyset);
    sql.push_str(&newest_order(time_column, id_column));
    sql.push_str(&format!(" LIMIT {}", keyset.limit.clamp(1, 500)));
    conn.query(&sql, &params)
}

/// [`newest_first`] with conditions no index serves (`narrow` appends them, each starting
/// with ` AND`): the rows of `indexed` are read in index order, at most `window` of them, and
/// `narrow` keeps the matching ones. A page that fills stops at its last row like any page; a
/// page cut short by the window reports where the window ended (`stopped_at`), so the cost
/// of a page is bounded however rare the match. Without `narrow`, [`newest_first`].
#[allow(clippy::too_many_arguments)]
pub fn newest_first_within(
    conn: &mut dyn Conn,
    columns: &str,
    indexed: &SqlBuilder,
    narrow: Option<&dyn Fn(&mut SqlBuilder)>,
    time_column: Option<&str>,
    id_column: &str,
    keyset: &Keyset,
    window: i64,
) -> Result<Scanned<Row>, DbError> {
    let Some(narrow) = narrow else {
        return Ok(Scanned {
            rows: newest_first(conn, columns, indexed, time_column, id_column, keyset)?,
            stopped_at: None,
        });
    };
    newest_first_within_joined(
        conn,
        columns,
        "",
        indexed,
        narrow,
        time_column,
        id_column,
        keyset,
        window,
    )
}

/// [`newest_first_within`] whose window (`w`, the rows of `indexed`) is joined to more
/// tables (`joined`, e.g. ` JOIN t s ON s.key = w.id`) for the columns and conditions the
/// window's own table lacks: the window is read from its index alone, and only its rows are
/// joined, instead of every row the index holds. `columns` and the conditions of `narrow`
/// name their tables where a name would be ambiguous.
#[allow(clippy::too_many_arguments)]
pub fn newest_first_within_joined(
    conn: &mut dyn Conn,
    columns: &str,
    joined: &str,
    indexed: &SqlBuilder,
    narrow: &dyn Fn(&mut SqlBuilder),
    time_column: Option<&str>,
    id_column: &str,
    keyset: &Keyset,
    window: i64,
) -> Result<Scanned<Row>, DbError> {
    let order = newest_order(time_column, id_column);
    let mut params = indexed.params().to_vec();
    let mut from = indexed.sql().to_owned();
    after_keyset(&mut from, &mut params, time_column, id_column, keyset);
    let mut q = SqlBuilder::continuing(
        format!(
            "SELECT {columns} FROM (SELECT * {from}{order} LIMIT {window}) w{joined} WHERE 1 = 1"
        ),
        params.clone(),
    );
    narrow(&mut q);
    q.push(&order);
    let limit = keyset.limit.clamp(1, 500);
    q.push(&format!(" LIMIT {limit}"));
    let rows = conn.query(q.sql(), q.params())?;
    if rows.len() as i64 == limit {
        return Ok(Scanned {
            rows,
            stopped_at: None,
        });
    }
    // Short: either the rows ran out or the window did. The window's last row says which.
    let last = format!(
        "SELECT {} {from}{order} LIMIT 1 OFFSET {}",
        match time_column {
            Some(t) => format!("{t}, {id_column}"),
            None => format!("CAST(0 AS BIGINT), {id_column}"),
        },
        window - 1
    );
    let stopped_at = match conn.query(&last, &params)?.first() {
        Some(row) => Some((row.int(0)?, row.int(1)?)),
        None => None,
    };
    Ok(Scanned { rows, stopped_at })
}
