//! Runs of Actions scenarios: the interpreter's state between steps, stored at every step
//! that waits, so a run survives a restart and any node can resume it.
//!
//! Every save checks the `version` it read (optimistic concurrency): two nodes or two events
//! racing on one run cannot both advance it.

use dialtone_domain::run::{RunKind, RunStatus};
use dialtone_domain::{Sid, Timestamp};

use crate::params;
use crate::sql::{Conn, DbError, Dialect};

/// A stored run.
#[derive(Debug, Clone, PartialEq)]
pub struct Run {
    /// Internal key.
    pub id: i64,
    /// The run id.
    pub sid: Sid,
    /// Owner.
    pub account_id: i64,
    /// Scenario sid and name when it started.
    pub scenario_sid: String,
    /// Scenario name when it started.
    pub scenario_name: String,
    /// The script it runs (a snapshot: editing the scenario does not change a started run).
    pub script: String,
    /// What started it.
    pub kind: RunKind,
    /// Where it is.
    pub status: RunStatus,
    /// The interpreter's state (JSON), None once ended.
    pub state: Option<String>,
    /// Variables with their values (JSON object).
    pub variables: String,
    /// Log lines (JSON array).
    pub log: String,
    /// Why it failed.
    pub error: Option<String>,
    /// The call it drives, if any.
    pub call_id: Option<i64>,
    /// Commands waiting for an outside result (JSON array).
    pub pending: String,
    /// Bumped at every save.
    pub version: i64,
    /// When a timer of the run is due.
    pub next_at: Option<Timestamp>,
    /// Start.
    pub started: Timestamp,
    /// End.
    pub ended: Option<Timestamp>,
}

crate::row_decoder! {
    const COLUMNS; fn from_row -> Run {
        id: int("id"),
        sid: sid("sid"),
        account_id: int("account_id"),
        scenario_sid: text("scenario_sid"),
        scenario_name: text("scenario_name"),
        script: text("script"),
        kind: word("type"),
        status: word("status"),
        state: opt_text("state"),
        variables: text("variables"),
        log: text("log"),
        error: opt_text("error"),
        call_id: opt_int("call_id"),
        pending: text("pending"),
        version: int("version"),
        next_at: opt_timestamp("next_at"),
        started: timestamp("started"),
        ended: opt_timestamp("ended"),
    }
}

/// What a new run starts with.
#[derive(Debug, Clone)]
pub struct NewRun<'a> {
    /// Owner.
    pub account_id: i64,
    /// Scenario sid.
    pub scenario_sid: &'a str,
    /// Scenario name.
    pub scenario_name: &'a str,
    /// Script snapshot.
    pub script: &'a str,
    /// What started it.
    pub kind: RunKind,
    /// The call it drives.
    pub call_id: Option<i64>,
}

/// A run to create with its start already stored: the interpreter's first state and the
/// lease of the node that creates it (until then no other node starts it).
#[derive(Debug, Clone)]
pub struct StartedRun<'a> {
    /// What it runs, for whom.
    pub new: NewRun<'a>,
    /// Its id, made by the caller (its first state names it).
    pub sid: Sid,
    /// The interpreter's first state (JSON).
    pub state: String,
    /// Until when the creating node alone may start it.
    pub lease: Timestamp,
    /// Creation time.
    pub now: Timestamp,
}

/// Creates runs in `running` with their start stored, and gives them as stored: on
/// PostgreSQL one statement for any number (the columns bound as arrays), on SQLite one
/// insert and read each (no round trips there). `None` where the run's sid was taken
/// (also by an earlier row of the same call): nothing was written for it, and the caller
/// makes it again with another sid.
pub fn insert_started(
    conn: &mut dyn Conn,
    rows: &[StartedRun<'_>],
) -> Result<Vec<Option<Run>>, DbError> {
    if rows.is_empty() {
        return Ok(Vec::new());
    }
    match conn.dialect() {
        Dialect::Postgres => insert_started_unnested(conn, rows),
        Dialect::Sqlite => {
            let mut out = Vec::with_capacity(rows.len());
            for r in rows {
                let id = conn.insert_id(
                        "INSERT INTO runs (sid, account_id, scenario_sid, scenario_name, script, type, status, call_id, \
                         state, next_at, started, updated) \
                         VALUES ($1, $2, $3, $4, $5, $6, 'running', $7, $8, $9, $10, $10) ON CONFLICT (sid) DO NOTHING",
                        params![
                            &r.sid,
                            r.new.account_id,
                            r.new.scenario_sid,
                            r.new.scenario_name,
                            r.new.script,
                            r.new.kind.as_str(),
                            r.new.call_id,
                            r.state.as_str(),
                            r.lease,
                            r.now
                        ],
                    )?;
                out.push(match id {
                    Some(id) => Some(by_id(conn, id)?.ok_or_else(|| {
                        DbError::Other(format!("run {id} vanished after its insert"))
                    })?),
                    None => None,
                });
            }
            Ok(out)
        }
    }
}

/// [`insert_started`] on PostgreSQL: one `INSERT ... SELECT FROM UNNEST(...) RETURNING`, the
/// runs given back in the order asked (matched by sid: `RETURNING` promises no order).
fn insert_started_unnested(
    conn: &mut dyn Conn,
    rows: &[StartedRun<'_>],
) -> Result<Vec<Option<Run>>, DbError> {
    let text = |f: fn(&StartedRun<'_>) -> String| rows.iter().map(move |r| Some(f(r)));
    let columns = crate::sql::Columns::new()
        .text("sid", text(|r| r.sid.as_str().to_owned()))
        .int("account_id", rows.iter().map(|r| Some(r.new.account_id)))
        .text("scenario_sid", text(|r| r.new.scenario_sid.to_owned()))
        .text("scenario_name", text(|r| r.new.scenario_name.to_owned()))
        .text("script", text(|r| r.new.script.to_owned()))
        .text("type", text(|r| r.new.kind.as_str().to_owned()))
        .int("call_id", rows.iter().map(|r| r.new.call_id))
        .text("state", text(|r| r.state.clone()))
        .int("next_at", rows.iter().map(|r| Some(r.lease.millis())))
        .int("started", rows.iter().map(|r| Some(r.now.millis())));
    let sql = format!(
        "INSERT INTO runs (sid, account_id, scenario_sid, scenario_name, script, type, status, call_id, \
         state, next_at, started, updated) \
         SELECT sid, account_id, scenario_sid, scenario_name, script, type, 'running', call_id, \
         state, next_at, started, started FROM {} ON CONFLICT (sid) DO NOTHING RETURNING {COLUMNS}",
        columns.unnest("r", 1)
    );
    let mut by_sid: std::collections::HashMap<String, Run> = conn
        .query(&sql, &columns.into_params())?
        .iter()
        .map(|row| from_row(row).map(|run| (run.sid.as_str().to_owned(), run)))
        .collect::<Result<_, _>>()?;
    // `remove`: a sid given twice is written once, and only its first row has it.
    Ok(rows.iter().map(|r| by_sid.remove(r.sid.as_str())).collect())
}

/// A run by its internal key.
pub fn by_id(conn: &mut dyn Conn, id: i64) -> Result<Option<Run>, DbError> {
    conn.query_opt(
        &format!("SELECT {COLUMNS} FROM runs WHERE id = $1"),
        params![id],
    )?
    .map(|r| from_row(&r))
    .transpose()
}

/// A run of the account's scenario.
pub fn get(
    conn: &mut dyn Conn,
    account_id: i64,
    scenario_sid: &str,
    sid: &Sid,
) -> Result<Option<Run>, DbError> {
    conn.query_opt(
        &format!(
            "SELECT {COLUMNS} FROM runs WHERE account_id = $1 AND scenario_sid = $2 AND sid = $3"
        ),
        params![account_id, scenario_sid, sid],
    )?
    .map(|r| from_row(&r))
    .transpose()
}

/// The live runs driving a call.
pub fn live_for_call(conn: &mut dyn Conn, call_id: i64) -> Result<Vec<Run>, DbError> {
    conn.query(
        &format!(
            "SELECT {COLUMNS} FROM runs WHERE call_id = $1 AND status = 'running' ORDER BY id"
        ),
        params![call_id],
    )?
    .iter()
    .map(from_row)
    .collect()
}

/// What a step changes in a run.
#[derive(Debug, Clone)]
pub struct Progress<'a> {
    /// New status.
    pub status: RunStatus,
    /// New interpreter state (None once ended).
    pub state: Option<&'a str>,
    /// Variables (JSON object).
    pub variables: &'a str,
    /// Whole log (JSON array).
    pub log: &'a str,
    /// Error, when failed.
    pub error: Option<&'a str>,
    /// Commands waiting for an outside result (JSON array).
    pub pending: &'a str,
    /// Timer.
    pub next_at: Option<Timestamp>,
}

/// Saves a step if nobody saved the run since `version` was read; false when someone did
/// (the caller reloads and tries again).
pub fn save(
    conn: &mut dyn Conn,
    id: i64,
    version: i64,
    p: &Progress<'_>,
    now: Timestamp,
) -> Result<bool, DbError> {
    let ended = p.status.is_final().then_some(now);
    let n = conn.execute(
        "UPDATE runs SET status = $1, state = $2, variables = $3, log = $4, error = $5, pending = $6, next_at = $7, \
         ended = COALESCE(ended, $8), updated = $9, version = version + 1 WHERE id = $10 AND version = $11",
        params![
            p.status.as_str(),
            p.state, p.variables, p.log, p.error, p.pending, p.next_at, ended, now, id,
            version
        ],
    )?;
    Ok(n == 1)
}

/// A step to save with [`save_many`]: the run, the version its step was made from, what the
/// step changes, and when.
#[derive(Debug, Clone)]
pub struct StepSave<'a> {
    /// The run's internal key.
    pub id: i64,
    /// The version the step was made from.
    pub version: i64,
    /// What the step changes.
    pub progress: Progress<'a>,
    /// When.
    pub now: Timestamp,
}

/// [`save`] for many runs at once: on PostgreSQL one statement for any number (the values
/// bound as arrays), on SQLite one statement each. Whether each was saved, in order. A run
/// given twice is saved at most once: its later steps are refused (their driver reads it
/// again), since one statement cannot tell which of them it applied.
pub fn save_many(conn: &mut dyn Conn, saves: &[StepSave<'_>]) -> Result<Vec<bool>, DbError> {
    use std::collections::HashSet;

    use crate::sql::Columns;
    let mut seen = HashSet::with_capacity(saves.len());
    let first: Vec<bool> = saves.iter().map(|s| seen.insert(s.id)).collect();
    if conn.dialect() == Dialect::Sqlite {
        return saves
            .iter()
            .zip(&first)
            .map(|(s, &first)| {
                if first {
                    save(conn, s.id, s.version, &s.progress, s.now)
                } else {
                    Ok(false)
                }
            })
            .collect();
    }
    let taken: Vec<&StepSave<'_>> = saves
        .iter()
        .zip(&first)
        .filter(|&(_, &first)| first)
        .map(|(s, _)| s)
        .collect();
    if taken.is_empty() {
        return Ok(Vec::new());
    }
    let text = |f: fn(&StepSave<'_>) -> Option<String>| taken.iter().map(move |s| f(s));
    let int = |f: fn(&StepSave<'_>) -> Option<i64>| taken.iter().map(move |s| f(s));
    let columns = Columns::new()
        .int("id", int(|s| Some(s.id)))
        .int("version", int(|s| Some(s.version)))
        .text(
            "status",
            text(|s| Some(s.progress.status.as_str().to_owned())),
        )
        .text("state", text(|s| s.progress.state.map(str::to_owned)))
        .text("variables", text(|s| Some(s.progress.variables.to_owned())))
        .text("log", text(|s| Some(s.progress.log.to_owned())))
        .text("error", text(|s| s.progress.error.map(str::to_owned)))
        .text("pending", text(|s| Some(s.progress.pending.to_owned())))
        .int(
            "next_at",
            int(|s| s.progress.next_at.map(Timestamp::millis)),
        )
        .int(
            "ended",
            int(|s| s.progress.status.is_final().then_some(s.now.millis())),
        )
        .int("updated", int(|s| Some(s.now.millis())));
    let sql = format!(
        "UPDATE runs SET status = u.status, state = u.state, variables = u.variables, log = u.log, \
         error = u.error, pending = u.pending, next_at = u.next_at, ended = COALESCE(runs.ended, u.ended), \
         updated = u.updated, version = runs.version + 1 \
         FROM {} WHERE runs.id = u.id AND runs.version = u.version RETURNING runs.id",
        columns.unnest("u", 1)
    );
    let saved: HashSet<i64> = conn
        .query(&sql, &columns.into_params())?
        .iter()
        .map(|r| r.int(0))
        .collect::<Result<_, _>>()?;
    Ok(saves
        .iter()
        .zip(first)
        .map(|(s, first)| first && saved.contains(&s.id))
        .collect())
}

/// Runs whose timer is due, leased for `lease_ms` so that one node takes each.
pub fn claim_due(
    conn: &mut dyn Conn,
    now: Timestamp,
    lease_ms: i64,
    limit: i64,
    exclude_accounts: &[i64],
    pick: &mut dyn FnMut(&Run) -> bool,
) -> Result<Vec<Run>, DbError> {
    let lock = match conn.dialect() {
        Dialect::Postgres => " FOR UPDATE SKIP LOCKED",
        Dialect::Sqlite => "",
    };
    let mut params = vec![crate::sql::Value::from(now)];
    let accounts = exclude_accounts.iter().map(|a| (*a).into()).collect();
    let filter = crate::sql::not_in("account_id", accounts, &mut params);
    let scan = limit.max(1) * 4;
    let mut due: Vec<Run> = Vec::new();
    for row in conn.query(
        &format!(
            "SELECT {COLUMNS} FROM runs WHERE next_at IS NOT NULL AND next_at <= $1 AND status = 'running'{filter} \
             ORDER BY next_at LIMIT {scan}{lock}"
        ),
        &params,
    )? {
        if due.len() as i64 >= limit {
            break;
        }
        let run = from_row(&row)?;
        if pick(&run) {
            due.push(run);
        }
    }
    for run in &due {
        conn.execute(
            "UPDATE runs SET next_at = $1 WHERE id = $2",
            params![now.plus_ms(lease_ms), run.id],
        )?;
    }
    Ok(due)
}

/// A page of the runs of one of the account's scenarios newest first, from after
/// `keyset`'s id.
pub fn newest_of_scenario(
    conn: &mut dyn Conn,
    account_id: i64,
    scenario_sid: &str,
    keyset: &crate::search::Keyset,
) -> Result<Vec<Run>, DbError> {
    let mut q = crate::sql::SqlBuilder::new("FROM runs WHERE account_id = ");
    q.bind(account_id);
    q.push(" AND scenario_sid = ").bind(scenario_sid);
    crate::search::newest_first(conn, COLUMNS, &q, None, "id", keyset)?
        .iter()
        .map(from_row)
        .collect()
}
