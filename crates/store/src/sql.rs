//! The small SQL surface both backends share: parameters, values, rows and a connection trait.
//!
//! Repository code writes one SQL text with `$1, $2, ...` placeholders and runs it on either
//! backend; where the dialects differ it asks [`Conn::dialect`].
//!
//! The `LIMIT` of a statement the workers run over and over (claims of due work) is written
//! into the SQL text as a number, not bound: SQLite's planner reads a bound `LIMIT`, so it
//! compiles such a statement again at every run (measured: every run re-prepared). The
//! limits there are constants of the code, so the statement is still compiled once.

use std::fmt;

/// Which database a connection talks to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// SQLite (embedded default).
    Sqlite,
    /// PostgreSQL (scaled out).
    Postgres,
}

/// A value bound to a placeholder or read from a column.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// SQL NULL.
    Null,
    /// A 64-bit integer (BIGINT on PostgreSQL, INTEGER on SQLite).
    Int(i64),
    /// Text.
    Text(String),
    /// A boolean (BOOLEAN on PostgreSQL, 0/1 on SQLite).
    Bool(bool),
    /// Bytes (BYTEA / BLOB).
    Blob(Vec<u8>),
    /// A column of many rows, bound as one array (PostgreSQL only: a statement that writes
    /// many rows at once with `UNNEST`; see [`Columns`]).
    Array(Array),
}

/// The values of one column over many rows (see [`Value::Array`]).
#[derive(Debug, Clone, PartialEq)]
pub enum Array {
    /// `bigint[]`.
    Int(Vec<Option<i64>>),
    /// `text[]`.
    Text(Vec<Option<String>>),
    /// `boolean[]`.
    Bool(Vec<bool>),
}

impl Array {
    /// The PostgreSQL type of the array, for its cast in [`Columns::unnest`].
    pub fn sql_type(&self) -> &'static str {
        match self {
            Array::Int(_) => "bigint[]",
            Array::Text(_) => "text[]",
            Array::Bool(_) => "boolean[]",
        }
    }
}

/// Rows bound column by column, each column one array: what a PostgreSQL statement reads as a
/// table with `UNNEST` ([`Columns::unnest`]), so one statement text (prepared once) writes
/// any number of rows in one round trip.
#[derive(Debug, Default)]
pub struct Columns {
    names: Vec<&'static str>,
    arrays: Vec<Array>,
}

impl Columns {
    /// No columns yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// A `bigint` column.
    pub fn int(mut self, name: &'static str, values: impl Iterator<Item = Option<i64>>) -> Self {
        self.names.push(name);
        self.arrays.push(Array::Int(values.collect()));
        self
    }

    /// A `text` column.
    pub fn text(
        mut self,
        name: &'static str,
        values: impl Iterator<Item = Option<String>>,
    ) -> Self {
        self.names.push(name);
        self.arrays.push(Array::Text(values.collect()));
        self
    }

    /// A `boolean` column.
    pub fn bool(mut self, name: &'static str, values: impl Iterator<Item = bool>) -> Self {
        self.names.push(name);
        self.arrays.push(Array::Bool(values.collect()));
        self
    }

    /// `UNNEST($first::bigint[], ...) AS alias(a, ...)`: the rows as a table, the arrays
    /// numbered from `$first`.
    pub fn unnest(&self, alias: &str, first: usize) -> String {
        self.table(alias, first, false)
    }

    /// Like [`Columns::unnest`], with a last column `ord` numbering the rows from 1: a
    /// statement that inserts them `ORDER BY ord` gives them identities in their order.
    pub fn unnest_ordered(&self, alias: &str, first: usize) -> String {
        self.table(alias, first, true)
    }

    fn table(&self, alias: &str, first: usize, ordinality: bool) -> String {
        let arrays: Vec<String> = self
            .arrays
            .iter()
            .enumerate()
            .map(|(i, a)| format!("${}::{}", first + i, a.sql_type()))
            .collect();
        let (with, ord) = if ordinality {
            (" WITH ORDINALITY", ", ord")
        } else {
            ("", "")
        };
        format!(
            "UNNEST({}){with} AS {alias}({}{ord})",
            arrays.join(", "),
            self.names.join(", ")
        )
    }

    /// The arrays as parameters, in order.
    pub fn into_params(self) -> Vec<Value> {
        self.arrays.into_iter().map(Value::Array).collect()
    }
}

impl From<i64> for Value {
    fn from(v: i64) -> Self {
        Value::Int(v)
    }
}
impl From<i32> for Value {
    fn from(v: i32) -> Self {
        Value::Int(i64::from(v))
    }
}
impl From<u32> for Value {
    fn from(v: u32) -> Self {
        Value::Int(i64::from(v))
    }
}
impl From<usize> for Value {
    fn from(v: usize) -> Self {
        Value::Int(i64::try_from(v).unwrap_or(i64::MAX))
    }
}
impl From<bool> for Value {
    fn from(v: bool) -> Self {
        Value::Bool(v)
    }
}
impl From<&str> for Value {
    fn from(v: &str) -> Self {
        Value::Text(v.to_owned())
    }
}
impl From<String> for Value {
    fn from(v: String) -> Self {
        Value::Text(v)
    }
}
impl From<&String> for Value {
    fn from(v: &String) -> Self {
        Value::Text(v.clone())
    }
}
impl From<Vec<u8>> for Value {
    fn from(v: Vec<u8>) -> Self {
        Value::Blob(v)
    }
}
impl From<&[u8]> for Value {
    fn from(v: &[u8]) -> Self {
        Value::Blob(v.to_vec())
    }
}
impl<T: Into<Value>> From<Option<T>> for Value {
    fn from(v: Option<T>) -> Self {
        v.map_or(Value::Null, Into::into)
    }
}
impl From<dialtone_domain::Timestamp> for Value {
    fn from(v: dialtone_domain::Timestamp) -> Self {
        Value::Int(v.millis())
    }
}
impl From<dialtone_domain::Money> for Value {
    fn from(v: dialtone_domain::Money) -> Self {
        Value::Int(v.units())
    }
}
impl From<&dialtone_domain::Sid> for Value {
    fn from(v: &dialtone_domain::Sid) -> Self {
        Value::Text(v.as_str().to_owned())
    }
}
impl From<&dialtone_domain::E164> for Value {
    fn from(v: &dialtone_domain::E164) -> Self {
        Value::Text(v.as_str().to_owned())
    }
}

/// Builds a parameter slice: `params![a, b, c]`.
#[macro_export]
macro_rules! params {
    () => { &[] as &[$crate::Value] };
    ($($v:expr),+ $(,)?) => { &[$($crate::Value::from($v)),+] as &[$crate::Value] };
}

/// Why a database operation failed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum DbError {
    /// A unique constraint refused the write.
    #[error("unique constraint violated: {0}")]
    UniqueViolation(String),
    /// A column held something other than the type asked for (a bug, not user input).
    #[error("column {column}: {message}")]
    Decode {
        /// Column index.
        column: usize,
        /// What was wrong.
        message: String,
    },
    /// The store is shut down or its worker threads are gone.
    #[error("the store is closed")]
    Closed,
    /// Anything else the database reported.
    #[error("database error: {0}")]
    Other(String),
}

/// One result row, decoded eagerly so it can leave the database thread.
#[derive(Debug, Clone)]
pub struct Row {
    values: Vec<Value>,
}

impl Row {
    /// Wraps decoded column values.
    pub fn new(values: Vec<Value>) -> Self {
        Self { values }
    }

    fn value(&self, i: usize) -> Result<&Value, DbError> {
        self.values.get(i).ok_or_else(|| DbError::Decode {
            column: i,
            message: "no such column".into(),
        })
    }

    fn wrong(&self, i: usize, want: &str) -> DbError {
        DbError::Decode {
            column: i,
            message: format!("expected {want}, found {:?}", self.values.get(i)),
        }
    }

    /// An integer column.
    pub fn int(&self, i: usize) -> Result<i64, DbError> {
        match self.value(i)? {
            Value::Int(v) => Ok(*v),
            Value::Bool(b) => Ok(i64::from(*b)),
            _ => Err(self.wrong(i, "integer")),
        }
    }

    /// A nullable integer column.
    pub fn opt_int(&self, i: usize) -> Result<Option<i64>, DbError> {
        match self.value(i)? {
            Value::Null => Ok(None),
            _ => self.int(i).map(Some),
        }
    }

    /// A text column.
    pub fn text(&self, i: usize) -> Result<String, DbError> {
        match self.value(i)? {
            Value::Text(v) => Ok(v.clone()),
            _ => Err(self.wrong(i, "text")),
        }
    }

    /// A nullable text column.
    pub fn opt_text(&self, i: usize) -> Result<Option<String>, DbError> {
        match self.value(i)? {
            Value::Null => Ok(None),
            _ => self.text(i).map(Some),
        }
    }

    /// A boolean column (0/1 on SQLite).
    pub fn bool(&self, i: usize) -> Result<bool, DbError> {
        match self.value(i)? {
            Value::Bool(b) => Ok(*b),
            Value::Int(v) => Ok(*v != 0),
            _ => Err(self.wrong(i, "boolean")),
        }
    }

    /// A bytes column.
    pub fn blob(&self, i: usize) -> Result<Vec<u8>, DbError> {
        match self.value(i)? {
            Value::Blob(v) => Ok(v.clone()),
            Value::Text(t) => Ok(t.clone().into_bytes()),
            _ => Err(self.wrong(i, "bytes")),
        }
    }

    /// A nullable bytes column.
    pub fn opt_blob(&self, i: usize) -> Result<Option<Vec<u8>>, DbError> {
        match self.value(i)? {
            Value::Null => Ok(None),
            _ => self.blob(i).map(Some),
        }
    }

    /// An instant stored as epoch milliseconds.
    pub fn timestamp(&self, i: usize) -> Result<dialtone_domain::Timestamp, DbError> {
        self.int(i).map(dialtone_domain::Timestamp::from_millis)
    }

    /// A nullable instant.
    pub fn opt_timestamp(&self, i: usize) -> Result<Option<dialtone_domain::Timestamp>, DbError> {
        Ok(self
            .opt_int(i)?
            .map(dialtone_domain::Timestamp::from_millis))
    }

    /// An amount stored in hundredths of a cent.
    pub fn money(&self, i: usize) -> Result<dialtone_domain::Money, DbError> {
        self.int(i).map(dialtone_domain::Money::from_units)
    }

    /// A public identifier.
    pub fn sid(&self, i: usize) -> Result<dialtone_domain::Sid, DbError> {
        self.text(i).map(dialtone_domain::Sid::from_stored)
    }

    /// A word of a typed state ([`dialtone_domain::Word`]); a word the enum does not know
    /// is an error, never a default.
    pub fn word<W: dialtone_domain::Word>(&self, i: usize) -> Result<W, DbError> {
        let text = self.text(i)?;
        W::from_word(&text).ok_or_else(|| DbError::Decode {
            column: i,
            message: format!("unknown {}: {text:?}", std::any::type_name::<W>()),
        })
    }

    /// A nullable word.
    pub fn opt_word<W: dialtone_domain::Word>(&self, i: usize) -> Result<Option<W>, DbError> {
        match self.value(i)? {
            Value::Null => Ok(None),
            _ => self.word(i).map(Some),
        }
    }
}

/// Declares how a table's rows decode, from one definition: the column list to select
/// (`$cols`) and the function reading a row into `$ty` (`$from`), each field read with its
/// [`Row`] getter at its own column's position, so no index can drift from the list.
#[macro_export]
macro_rules! row_decoder {
    (
        const $cols:ident; fn $from:ident -> $ty:ident {
            $first:ident: $first_get:ident($first_col:literal)
            $(, $field:ident: $get:ident($col:literal))* $(,)?
        }
    ) => {
        const $cols: &str = concat!($first_col $(, ", ", $col)*);

        fn $from(r: &$crate::sql::Row) -> Result<$ty, $crate::sql::DbError> {
            let mut at = 0usize;
            let mut next = || {
                at += 1;
                at - 1
            };
            Ok($ty {
                $first: r.$first_get(next())?,
                $($field: r.$get(next())?,)*
            })
        }
    };
}

/// A connection (or transaction) either backend hands to repository code.
pub trait Conn {
    /// Which SQL dialect this is, for the few statements that differ.
    fn dialect(&self) -> Dialect;

    /// Runs a statement; returns the number of rows it changed.
    fn execute(&mut self, sql: &str, params: &[Value]) -> Result<u64, DbError>;

    /// Runs a query and returns every row.
    fn query(&mut self, sql: &str, params: &[Value]) -> Result<Vec<Row>, DbError>;

    /// Runs several statements without parameters (DDL, migrations).
    fn batch(&mut self, sql: &str) -> Result<(), DbError>;

    /// Whether a statement failed, since the last call, because another transaction held
    /// what it needed (a deadlock or a serialization failure): the write, run again alone,
    /// would not meet it. Clears the mark. SQLite's single writer never meets one.
    fn take_contention(&mut self) -> bool {
        false
    }

    /// Turns deferred debits on (a new, empty set) or off for the writes that follow; says
    /// whether they are on. Only PostgreSQL defers: SQLite's single writer never waits for
    /// another's row lock. See the `debits` module.
    fn defer_debits(&mut self, on: bool) -> bool {
        let _ = on;
        false
    }

    /// The debits deferred to the end of the batch being written, when they are on.
    fn deferred_debits(&mut self) -> Option<&mut crate::debits::Deferred> {
        None
    }

    /// The holder of credit slices this connection's debits take (PostgreSQL: one per
    /// session); `None` on SQLite, whose debits take the account's row. See the `slices`
    /// module.
    fn credit_holder(&self) -> Option<i64> {
        None
    }

    /// At most one row.
    fn query_opt(&mut self, sql: &str, params: &[Value]) -> Result<Option<Row>, DbError> {
        Ok(self.query(sql, params)?.into_iter().next())
    }

    /// Inserts one row and gives its `id`, or `None` when an `ON CONFLICT ... DO NOTHING`
    /// skipped it. `sql` has no `RETURNING`: PostgreSQL adds `RETURNING id`; SQLite reads
    /// the last rowid instead, because `RETURNING` makes SQLite keep a statement journal
    /// (a copy of every page the statement touches).
    fn insert_id(&mut self, sql: &str, params: &[Value]) -> Result<Option<i64>, DbError> {
        match self.query_opt(&format!("{sql} RETURNING id"), params)? {
            Some(row) => Ok(Some(row.int(0)?)),
            None => Ok(None),
        }
    }

    /// Exactly one row.
    fn query_one(&mut self, sql: &str, params: &[Value]) -> Result<Row, DbError> {
        self.query_opt(sql, params)?
            .ok_or_else(|| DbError::Other(format!("expected a row from: {sql}")))
    }
}

/// Builds a statement with a growing parameter list, for searches with optional filters.
#[derive(Debug, Default)]
pub struct SqlBuilder {
    sql: String,
    params: Vec<Value>,
}

impl SqlBuilder {
    /// Starts with a fixed SQL prefix.
    pub fn new(prefix: &str) -> Self {
        Self {
            sql: prefix.to_owned(),
            params: Vec::new(),
        }
    }

    /// Goes on from SQL text whose placeholders already number `params`: what is bound next
    /// is numbered after them.
    pub fn continuing(sql: String, params: Vec<Value>) -> Self {
        Self { sql, params }
    }

    /// Appends SQL text.
    pub fn push(&mut self, sql: &str) -> &mut Self {
        self.sql.push_str(sql);
        self
    }

    /// Appends a placeholder bound to `value`.
    pub fn bind(&mut self, value: impl Into<Value>) -> &mut Self {
        self.params.push(value.into());
        let n = self.params.len();
        self.sql.push_str(&format!("${n}"));
        self
    }

    /// The SQL text so far.
    pub fn sql(&self) -> &str {
        &self.sql
    }

    /// The parameters so far.
    pub fn params(&self) -> &[Value] {
        &self.params
    }
}

impl fmt::Display for SqlBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.sql)
    }
}

/// ` AND {column} NOT IN ($n, …)` with each value bound after `params`, or nothing when
/// `values` is empty: how a claim leaves out the accounts (or endpoints) already at their cap.
pub fn not_in(column: &str, values: Vec<Value>, params: &mut Vec<Value>) -> String {
    if values.is_empty() {
        return String::new();
    }
    let (first, count) = (params.len() + 1, values.len());
    params.extend(values);
    format!(" AND {column} NOT IN ({})", placeholders(first, count))
}

/// `$first, $first+1, …`: `count` placeholders, the list of an `IN (…)`.
pub fn placeholders(first: usize, count: usize) -> String {
    (first..first + count)
        .map(|i| format!("${i}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `column = ANY($first::type[])` on PostgreSQL (the list bound as one array: one statement
/// text whatever its length), `column IN ($first, ...)` on SQLite; with the parameters to
/// append for it. The list must not be empty.
pub fn in_list(dialect: Dialect, column: &str, first: usize, list: Array) -> (String, Vec<Value>) {
    match dialect {
        Dialect::Postgres => (
            format!("{column} = ANY(${first}::{})", list.sql_type()),
            vec![Value::Array(list)],
        ),
        Dialect::Sqlite => {
            let values: Vec<Value> = match list {
                Array::Int(v) => v.into_iter().map(Value::from).collect(),
                Array::Text(v) => v.into_iter().map(Value::from).collect(),
                Array::Bool(v) => v.into_iter().map(Value::from).collect(),
            };
            (
                format!("{column} IN ({})", placeholders(first, values.len())),
                values,
            )
        }
    }
}

/// The list of an [`in_list`] of ids.
pub fn ids(ids: &[i64]) -> Array {
    Array::Int(ids.iter().map(|&id| Some(id)).collect())
}

/// Writes `len` rows whose keys are drawn at random (sids), drawing again for the rows whose
/// draw was taken: `write(todo)` writes the rows at the indexes `todo`, each with a fresh
/// draw, and gives each its stored value, or `None` where its draw was taken; at most
/// `rounds` rounds. A row still without a value after them stays `None`.
pub fn with_redraws<T, E>(
    len: usize,
    rounds: usize,
    mut write: impl FnMut(&[usize]) -> Result<Vec<Option<T>>, E>,
) -> Result<Vec<Option<T>>, E> {
    let mut stored: Vec<Option<T>> = (0..len).map(|_| None).collect();
    for _ in 0..rounds {
        let todo: Vec<usize> = (0..len).filter(|&i| stored[i].is_none()).collect();
        if todo.is_empty() {
            break;
        }
        let written = write(&todo)?;
        for (i, value) in todo.into_iter().zip(written) {
            stored[i] = value;
        }
    }
    Ok(stored)
}

/// Rows written many to a statement: the sizes of the statements [`row_chunks`] cuts, so a
/// handful of statement texts (each prepared once) serve any number of rows.
const CHUNK_SIZES: [usize; 4] = [64, 16, 4, 1];

/// Cuts `rows` into chunks of 64, 16, 4 and 1 rows, largest first: a multi-row statement per
/// chunk, instead of one statement (one round trip on PostgreSQL) per row.
pub fn row_chunks<T>(rows: &[T]) -> Vec<&[T]> {
    let mut out = Vec::new();
    let mut rest = rows;
    while !rest.is_empty() {
        let size = CHUNK_SIZES
            .into_iter()
            .find(|s| *s <= rest.len())
            .unwrap_or(1);
        let (chunk, tail) = rest.split_at(size);
        out.push(chunk);
        rest = tail;
    }
    out
}

/// One column of a [`values_list`] row.
#[derive(Debug, Clone, Copy)]
pub enum Item<'a> {
    /// A parameter, `$n`.
    Param,
    /// A parameter with a PostgreSQL cast, `$n::type` (PostgreSQL types the values of a
    /// `VALUES` list outside an `INSERT` only by their casts).
    Cast(&'a str),
    /// Constant SQL.
    Const(&'a str),
}

/// `(A, B, ...), (A, B, ...)`: `rows` tuples of `items`, the parameters numbered `$1, $2, ...`
/// row after row.
pub fn values_list(rows: usize, items: &[Item<'_>]) -> String {
    let mut out = String::with_capacity(rows * items.len() * 8);
    let mut n = 0;
    for row in 0..rows {
        if row > 0 {
            out.push_str(", ");
        }
        out.push('(');
        for (i, item) in items.iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            match item {
                Item::Param | Item::Cast(_) => {
                    n += 1;
                    out.push('$');
                    out.push_str(&n.to_string());
                    if let Item::Cast(ty) = item {
                        out.push_str("::");
                        out.push_str(ty);
                    }
                }
                Item::Const(sql) => out.push_str(sql),
            }
        }
        out.push(')');
    }
    out
}

/// The key of a PostgreSQL advisory lock named by `bytes` (FNV-1a, 64 bits): the same on
/// every node, whatever its build.
pub(crate) fn lock_key(bytes: &[u8]) -> i64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    i64::from_ne_bytes(h.to_ne_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_cover_every_row_once_with_few_sizes() {
        for n in 0..300 {
            let rows: Vec<usize> = (0..n).collect();
            let chunks = row_chunks(&rows);
            let flat: Vec<usize> = chunks.iter().flat_map(|c| c.iter().copied()).collect();
            assert_eq!(flat, rows);
            assert!(chunks.iter().all(|c| CHUNK_SIZES.contains(&c.len())));
        }
    }

    #[test]
    fn unnested_columns_number_their_arrays_from_the_first_placeholder() {
        let columns = Columns::new()
            .int("a", [Some(1), None].into_iter())
            .text("b", [Some("x".to_owned()), None].into_iter())
            .bool("c", [true, false].into_iter());
        assert_eq!(
            columns.unnest("t", 2),
            "UNNEST($2::bigint[], $3::text[], $4::boolean[]) AS t(a, b, c)"
        );
        assert_eq!(
            columns.unnest_ordered("t", 1),
            "UNNEST($1::bigint[], $2::text[], $3::boolean[]) WITH ORDINALITY AS t(a, b, c, ord)"
        );
        assert_eq!(columns.into_params().len(), 3);
    }

    #[test]
    fn in_lists_bind_one_array_on_postgres_and_one_parameter_each_on_sqlite() {
        let (sql, params) = in_list(Dialect::Postgres, "d.id", 2, ids(&[4, 5, 6]));
        assert_eq!(sql, "d.id = ANY($2::bigint[])");
        assert_eq!(params, [Value::Array(ids(&[4, 5, 6]))]);
        let (sql, params) = in_list(Dialect::Sqlite, "d.id", 2, ids(&[4, 5, 6]));
        assert_eq!(sql, "d.id IN ($2, $3, $4)");
        assert_eq!(params, [Value::Int(4), Value::Int(5), Value::Int(6)]);
    }

    #[test]
    fn values_lists_number_placeholders_row_after_row() {
        let items = [Item::Param, Item::Cast("bigint"), Item::Const("0")];
        assert_eq!(
            values_list(2, &items),
            "($1, $2::bigint, 0), ($3, $4::bigint, 0)"
        );
    }
}
