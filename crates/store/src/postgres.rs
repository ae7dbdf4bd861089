//! PostgreSQL backend: a pool of connection threads; each batches the writes waiting for it
//! into one transaction (savepoint per write), and serves reads in autocommit.

use std::collections::HashMap;
use std::error::Error as StdError;
use std::thread;
use std::time::{Duration, Instant};

use postgres::types::{FromSql, IsNull, ToSql, Type, to_sql_checked};
use postgres::{Client, NoTls, Statement};

use crate::pg_queues::{Next, Queues, Started};
use crate::pool::run_write_batch;
use crate::sql::{Conn, DbError, Dialect, Row, Value};

type BoxError = Box<dyn StdError + Sync + Send>;

impl ToSql for Value {
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut postgres::types::private::BytesMut,
    ) -> Result<IsNull, BoxError> {
        match self {
            Value::Null => Ok(IsNull::Yes),
            Value::Int(v) => match *ty {
                Type::INT8 => v.to_sql(ty, out),
                Type::INT4 => i32::try_from(*v)?.to_sql(ty, out),
                Type::INT2 => i16::try_from(*v)?.to_sql(ty, out),
                Type::BOOL => (*v != 0).to_sql(ty, out),
                Type::TEXT | Type::VARCHAR => v.to_string().to_sql(ty, out),
                _ => Err(format!("cannot bind an integer to {ty}").into()),
            },
            Value::Bool(b) => match *ty {
                Type::BOOL => b.to_sql(ty, out),
                Type::INT8 => i64::from(*b).to_sql(ty, out),
                Type::INT4 => i32::from(*b).to_sql(ty, out),
                _ => Err(format!("cannot bind a boolean to {ty}").into()),
            },
            Value::Text(t) => match *ty {
                Type::BYTEA => t.as_bytes().to_sql(ty, out),
                _ => t.as_str().to_sql(ty, out),
            },
            Value::Blob(b) => b.as_slice().to_sql(ty, out),
            Value::Array(a) => match a {
                crate::sql::Array::Int(v) => v.to_sql(ty, out),
                crate::sql::Array::Text(v) => v.to_sql(ty, out),
                crate::sql::Array::Bool(v) => v.to_sql(ty, out),
            },
        }
    }

    fn accepts(_ty: &Type) -> bool {
        true
    }

    to_sql_checked!();
}

impl<'a> FromSql<'a> for Value {
    fn from_sql(ty: &Type, raw: &'a [u8]) -> Result<Self, BoxError> {
        Ok(match *ty {
            Type::INT8 => Value::Int(i64::from_sql(ty, raw)?),
            Type::INT4 => Value::Int(i64::from(i32::from_sql(ty, raw)?)),
            Type::INT2 => Value::Int(i64::from(i16::from_sql(ty, raw)?)),
            Type::BOOL => Value::Bool(bool::from_sql(ty, raw)?),
            Type::BYTEA => Value::Blob(<Vec<u8>>::from_sql(ty, raw)?),
            _ => Value::Text(String::from_sql(ty, raw)?),
        })
    }

    fn from_sql_null(_ty: &Type) -> Result<Self, BoxError> {
        Ok(Value::Null)
    }

    fn accepts(ty: &Type) -> bool {
        matches!(
            *ty,
            Type::INT8
                | Type::INT4
                | Type::INT2
                | Type::BOOL
                | Type::BYTEA
                | Type::TEXT
                | Type::VARCHAR
                | Type::NAME
                | Type::BPCHAR
        )
    }
}

fn map_err(e: postgres::Error) -> DbError {
    if let Some(db) = e.as_db_error() {
        if *db.code() == postgres::error::SqlState::UNIQUE_VIOLATION {
            return DbError::UniqueViolation(db.message().to_owned());
        }
        return DbError::Other(format!("{}: {}", db.code().code(), db.message()));
    }
    DbError::Other(e.to_string())
}

/// How long a prepared statement is kept before it is prepared again. PostgreSQL plans a
/// prepared statement afresh for its first five runs, then keeps a generic plan for the
/// connection's life, replanned only when the table's statistics change (autovacuum's
/// `ANALYZE`, every minute at best). A plan made while a table was nearly empty scans it
/// whole: after an 8-second SMS benchmark on a fresh database, the batched state update of
/// 16 SMS took 7.1 ms through a sequential scan instead of 0.6 ms through the primary key.
/// Preparing again every few seconds keeps the plans in step with the tables' growth, for
/// the cost of a few `Parse` messages.
const PLAN_REFRESH: Duration = Duration::from_secs(5);

/// A PostgreSQL connection with its prepared-statement cache, seen through [`Conn`].
pub(crate) struct PgConn {
    client: Client,
    statements: HashMap<String, Statement>,
    /// When the cache was last emptied (see [`PLAN_REFRESH`]).
    prepared_since: Instant,
    /// A statement met a deadlock or a serialization failure (see [`Conn::take_contention`]).
    contention: bool,
    /// The debits of the batch being written, while deferred (see the `debits` module).
    deferred: Option<crate::debits::Deferred>,
    /// This session's id as a holder of credit slices (see the `slices` module): random, so
    /// a new session never takes over the slices of one that ended.
    holder: i64,
}

impl PgConn {
    /// Maps an error, marking the lock conflicts another try would not meet.
    fn fail(&mut self, e: postgres::Error) -> DbError {
        use postgres::error::SqlState;
        if let Some(code) = e.code()
            && (*code == SqlState::T_R_DEADLOCK_DETECTED
                || *code == SqlState::T_R_SERIALIZATION_FAILURE)
        {
            self.contention = true;
        }
        map_err(e)
    }

    fn statement(&mut self, sql: &str) -> Result<Statement, DbError> {
        if self.prepared_since.elapsed() >= PLAN_REFRESH {
            self.statements.clear();
            self.prepared_since = Instant::now();
        }
        if let Some(s) = self.statements.get(sql) {
            return Ok(s.clone());
        }
        let s = self.client.prepare(sql).map_err(|e| self.fail(e))?;
        if self.statements.len() > 512 {
            self.statements.clear();
        }
        self.statements.insert(sql.to_owned(), s.clone());
        Ok(s)
    }
}

fn refs(params: &[Value]) -> Vec<&(dyn ToSql + Sync)> {
    params.iter().map(|p| p as &(dyn ToSql + Sync)).collect()
}

impl Conn for PgConn {
    fn dialect(&self) -> Dialect {
        Dialect::Postgres
    }

    fn execute(&mut self, sql: &str, params: &[Value]) -> Result<u64, DbError> {
        let stmt = self.statement(sql)?;
        let done = self.client.execute(&stmt, &refs(params));
        done.map_err(|e| self.fail(e))
    }

    fn query(&mut self, sql: &str, params: &[Value]) -> Result<Vec<Row>, DbError> {
        let stmt = self.statement(sql)?;
        let rows = self.client.query(&stmt, &refs(params));
        let rows = rows.map_err(|e| self.fail(e))?;
        let mut out = Vec::with_capacity(rows.len());
        for row in rows {
            let mut values = Vec::with_capacity(row.len());
            for i in 0..row.len() {
                values.push(row.try_get::<_, Value>(i).map_err(|e| DbError::Decode {
                    column: i,
                    message: e.to_string(),
                })?);
            }
            out.push(Row::new(values));
        }
        Ok(out)
    }

    fn batch(&mut self, sql: &str) -> Result<(), DbError> {
        let done = self.client.batch_execute(sql);
        done.map_err(|e| self.fail(e))
    }

    fn take_contention(&mut self) -> bool {
        std::mem::take(&mut self.contention)
    }

    fn defer_debits(&mut self, on: bool) -> bool {
        self.deferred = on.then(crate::debits::Deferred::default);
        on
    }

    fn deferred_debits(&mut self) -> Option<&mut crate::debits::Deferred> {
        self.deferred.as_mut()
    }

    fn credit_holder(&self) -> Option<i64> {
        Some(self.holder)
    }
}

fn connect(url: &str) -> Result<PgConn, DbError> {
    let mut client = Client::connect(url, NoTls).map_err(map_err)?;
    // No JIT compilation: every statement here is a short one, and PostgreSQL compiles any
    // whose estimated cost passes `jit_above_cost` (100,000) at each run. A delivery claim
    // estimated so (a subplan costed per row) took 14 ms of compiling for 0.6 ms of reading
    // (docs/decisions.md).
    client.batch_execute("SET jit = off").map_err(map_err)?;
    Ok(PgConn {
        client,
        statements: HashMap::new(),
        prepared_since: Instant::now(),
        contention: false,
        deferred: None,
        holder: rand::random(),
    })
}

/// Connects `size` threads to `url` and returns their queues.
pub(crate) fn start(url: &str, size: usize) -> Result<Started, DbError> {
    let size = size.max(1);
    let (started, queues) = Queues::new(size);
    for (i, queues) in queues.into_iter().enumerate() {
        let conn = connect(url)?;
        let url = url.to_owned();
        thread::Builder::new()
            .name(format!("pg-{i}"))
            .spawn(move || connection_loop(conn, &url, &queues))
            .map_err(|e| DbError::Other(e.to_string()))?;
    }
    Ok(started)
}

/// Runs the jobs of one connection: batches of writes as [`Queues`] hands them out (never
/// requests' and background work's together), and reads.
fn connection_loop(mut conn: PgConn, url: &str, queues: &Queues) {
    loop {
        if conn.client.is_closed() {
            conn = reconnect(url);
        }
        match queues.next() {
            Next::Requests(batch) => run_write_batch(&mut conn, "BEGIN", batch),
            Next::Background(batch, place) => {
                run_write_batch(&mut conn, "BEGIN", batch);
                drop(place);
            }
            Next::Read(job) => job(&mut conn),
            Next::Closed => return,
        }
    }
}

fn reconnect(url: &str) -> PgConn {
    let mut wait = Duration::from_millis(50);
    loop {
        match connect(url) {
            Ok(conn) => return conn,
            Err(e) => {
                tracing::warn!(error = %e, "PostgreSQL connection lost; reconnecting");
                thread::sleep(wait);
                wait = (wait * 2).min(Duration::from_secs(5));
            }
        }
    }
}
