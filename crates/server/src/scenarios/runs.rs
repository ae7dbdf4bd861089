//! Runs created: for a call to a number, an SMS to a number, or through the API; each
//! within its account's quota of runs running at once, its start stored with it.

use std::collections::HashMap;

use dialtone_domain::run::RunKind;
use dialtone_domain::{Sid, Timestamp};
use dialtone_store::calls::Call;
use dialtone_store::coalesce::{Coalesced, GroupResults};
use dialtone_store::runs::{self, NewRun, Run, StartedRun};
use dialtone_store::{Conn, scenarios, sql};
use serde_json::{Value, json};

use super::parsed::ParsedCache;
use super::stored::Stored;
use crate::error::{AppError, ErrorCode};
use crate::quotas::{self, Quota};

/// What a new run starts with.
pub(crate) struct RunStart<'a> {
    /// The account's quota of runs running at once.
    pub max_running: i64,
    /// Owner.
    pub account_id: i64,
    /// The scenario it runs.
    pub scenario: &'a scenarios::Scenario,
    /// What starts it.
    pub kind: RunKind,
    /// The call it handles.
    pub call: Option<&'a Call>,
    /// The SMS it handles (`sms` of expressions).
    pub sms: Option<Value>,
    /// Variables given by the API.
    pub input: serde_json::Map<String, Value>,
    /// Until when the creating node alone may start it.
    pub lease: Timestamp,
}

/// Creates a run (not started: its start is stored, leased until `lease`), within the
/// account's quota of runs running at once.
pub(crate) fn create(c: &mut dyn Conn, new: RunStart<'_>, now: Timestamp) -> Result<Run, AppError> {
    quotas::check_limit(c, Quota::RunningRuns, new.account_id, new.max_running)?;
    let mut created = insert(c, &[(new, now)])?;
    created
        .pop()
        .ok_or_else(|| AppError::internal("a run was not created"))
}

/// How many times [`insert`] draws new sids for runs whose sid was taken.
const SID_DRAWS: usize = 8;

/// Creates the runs of `starts`, each made at its time (their quota checked by the caller),
/// in one statement on PostgreSQL, and gives them as stored, in order.
fn insert(c: &mut dyn Conn, starts: &[(RunStart<'_>, Timestamp)]) -> Result<Vec<Run>, AppError> {
    let created = sql::with_redraws(starts.len(), SID_DRAWS, |todo| {
        let rows = todo
            .iter()
            .map(|&i| started_row(&starts[i].0, starts[i].1))
            .collect::<Result<Vec<_>, _>>()?;
        Ok::<_, AppError>(runs::insert_started(c, &rows)?)
    })?;
    created
        .into_iter()
        .map(|r| r.ok_or_else(|| AppError::internal("no free sid for a run")))
        .collect()
}

/// The row of a new run: a fresh sid, and its first state, which names it.
fn started_row<'a>(start: &RunStart<'a>, now: Timestamp) -> Result<StartedRun<'a>, AppError> {
    let sid = Sid::generate();
    let context = dialtone_actions::Context {
        now: now.to_rfc3339(),
        run: json!({"id": sid.as_str(), "type": start.kind}),
        scenario: json!({"sid": start.scenario.sid.as_str(), "name": start.scenario.name}),
        call: start.call.map(crate::voice::cdr::call_object),
        sms: start.sms.clone(),
        input: start.input.clone(),
    };
    let stored = Stored::Start {
        branch: start.kind.entry_branch().to_owned(),
        context,
    };
    Ok(StartedRun {
        new: NewRun {
            account_id: start.account_id,
            scenario_sid: start.scenario.sid.as_str(),
            scenario_name: &start.scenario.name,
            script: &start.scenario.script,
            kind: start.kind,
            call_id: start.call.map(|k| k.id),
        },
        sid,
        state: serde_json::to_string(&stored).map_err(AppError::internal)?,
        lease: start.lease,
        now,
    })
}

/// A run started through the API, created with the others started at the same time (see
/// `dialtone_store::coalesce`): each account's running runs counted once for the group, the
/// runs inserted by one statement.
pub(crate) struct ApiStart {
    pub max_running: i64,
    pub account_id: i64,
    pub scenario: scenarios::Scenario,
    /// The scenario was taken from this node's cache (`super::known`) without a read: the
    /// group checks that it is still stored so, else the run is not created
    /// ([`ApiStarted::ScenarioChanged`]) and the caller reads it again.
    pub scenario_kept: bool,
    /// The authentication version the account was taken at without a read (see
    /// `KeyCache::assumed`): when the database's is another, the run is not created
    /// ([`ApiStarted::AuthChanged`]) and the caller authenticates again. `None`: the request
    /// read it.
    pub auth_version: Option<i64>,
    pub input: serde_json::Map<String, Value>,
    pub lease: Timestamp,
    pub now: Timestamp,
}

/// What became of a run started through the API.
#[derive(Debug)]
pub(crate) enum ApiStarted {
    /// Created, leased to this node: the caller drives it.
    Run(Box<Run>),
    /// Not created: what authentication reads changed since the account was taken without
    /// a read (a key revoked, an account suspended, on any node).
    AuthChanged,
    /// Not created: the scenario kept by this node was changed or deleted since.
    ScenarioChanged,
}

/// What the group's first statement reads: the authentication version and, for the
/// scenarios its requests took from the cache, their name and script as stored now.
struct Current {
    auth_version: i64,
    scenarios: HashMap<i64, (String, String)>,
}

/// The group's first round trip: the authentication version, with the kept scenarios joined
/// (a scenario deleted since is simply not there); nothing when no request assumed either.
fn current(c: &mut dyn Conn, items: &[ApiStart]) -> Result<Current, AppError> {
    let mut kept: Vec<i64> = items
        .iter()
        .filter(|i| i.scenario_kept)
        .map(|i| i.scenario.id)
        .collect();
    kept.sort_unstable();
    kept.dedup();
    if kept.is_empty() && items.iter().all(|i| i.auth_version.is_none()) {
        return Ok(Current {
            auth_version: 0,
            scenarios: HashMap::new(),
        });
    }
    if kept.is_empty() {
        let v = c.query_one(
            "SELECT version FROM auth_version",
            dialtone_store::params![],
        )?;
        return Ok(Current {
            auth_version: v.int(0)?,
            scenarios: HashMap::new(),
        });
    }
    let (filter, params) = sql::in_list(c.dialect(), "s.id", 1, sql::ids(&kept));
    let rows = c.query(
        &format!(
            "SELECT v.version, s.id, s.name, s.script FROM auth_version v \
             LEFT JOIN scenarios s ON {filter}"
        ),
        &params,
    )?;
    let mut current = Current {
        auth_version: 0,
        scenarios: HashMap::new(),
    };
    for row in rows {
        current.auth_version = row.int(0)?;
        if let Some(id) = row.opt_int(1)? {
            current.scenarios.insert(id, (row.text(2)?, row.text(3)?));
        }
    }
    Ok(current)
}

impl ApiStart {
    /// Why this request cannot be created as it is, against what the group read.
    fn stale(&self, current: &Current) -> Option<ApiStarted> {
        if self.auth_version.is_some_and(|v| v != current.auth_version) {
            return Some(ApiStarted::AuthChanged);
        }
        let same = |(name, script): &(String, String)| {
            *name == self.scenario.name && *script == self.scenario.script
        };
        if self.scenario_kept && !current.scenarios.get(&self.scenario.id).is_some_and(same) {
            return Some(ApiStarted::ScenarioChanged);
        }
        None
    }
}

impl Coalesced for ApiStart {
    type Output = ApiStarted;
    type Error = AppError;

    fn run_all(c: &mut dyn Conn, items: &[Self]) -> GroupResults<Self> {
        let current = current(c, items)?;
        let mut held: HashMap<i64, i64> = HashMap::new();
        let mut results: Vec<Option<Result<ApiStarted, AppError>>> =
            Vec::with_capacity(items.len());
        let mut admitted = Vec::new();
        for item in items {
            if let Some(stale) = item.stale(&current) {
                results.push(Some(Ok(stale)));
                continue;
            }
            let count = match held.get(&item.account_id) {
                Some(n) => *n,
                None => quotas::held(c, Quota::RunningRuns, item.account_id)?,
            };
            if count >= item.max_running {
                held.insert(item.account_id, count);
                results.push(Some(Err(quotas::over(
                    Quota::RunningRuns,
                    count,
                    item.max_running,
                ))));
                continue;
            }
            held.insert(item.account_id, count + 1);
            admitted.push(results.len());
            results.push(None);
        }
        let starts: Vec<(RunStart<'_>, Timestamp)> = admitted
            .iter()
            .map(|&i| {
                let item = &items[i];
                let start = RunStart {
                    max_running: item.max_running,
                    account_id: item.account_id,
                    scenario: &item.scenario,
                    kind: RunKind::Api,
                    call: None,
                    sms: None,
                    input: item.input.clone(),
                    lease: item.lease,
                };
                (start, item.now)
            })
            .collect();
        for (i, run) in admitted.into_iter().zip(insert(c, &starts)?) {
            results[i] = Some(Ok(ApiStarted::Run(Box::new(run))));
        }
        Ok(results
            .into_iter()
            .map(|r| r.unwrap_or_else(|| Err(AppError::internal("a run of the group was lost"))))
            .collect())
    }
}

/// Starts the `inbound-sms` branch of the scenario attached to `to`, inside the transaction
/// that stores the inbound SMS; the worker runs it once committed.
pub(crate) fn start_inbound_sms(
    c: &mut dyn Conn,
    account_id: i64,
    to: &str,
    sms: Value,
    now: Timestamp,
    parsed: &ParsedCache,
    max_running: i64,
) -> Result<Option<i64>, AppError> {
    let Some(scenario) = scenarios::attached_to(c, to)? else {
        return Ok(None);
    };
    if !parsed
        .get(&scenario.script)
        .map(|s| s.has_branch("inbound-sms"))
        .unwrap_or(false)
    {
        return Ok(None);
    }
    let run = create(
        c,
        RunStart {
            max_running,
            account_id,
            scenario: &scenario,
            kind: RunKind::InboundSms,
            call: None,
            sms: Some(sms),
            input: serde_json::Map::new(),
            lease: now,
        },
        now,
    );
    match run {
        Ok(run) => Ok(Some(run.id)),
        // The SMS is received all the same; only its run is not started.
        Err(e) if e.code == ErrorCode::QuotaExceeded => {
            tracing::warn!(account_id, reason = %e.message, "inbound-sms run not started");
            Ok(None)
        }
        Err(e) => Err(e),
    }
}
