//! Runs created: for a call to a number, an SMS to a number, or through the API; each
//! within its account's quota of runs running at once, its start stored with it.

use dialtone_domain::Timestamp;
use dialtone_domain::run::RunKind;
use dialtone_store::calls::Call;
use dialtone_store::runs::{self, NewRun, Run};
use dialtone_store::{Conn, scenarios};
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
    let RunStart {
        max_running,
        account_id,
        scenario,
        kind,
        call,
        sms,
        input,
        lease,
    } = new;
    quotas::check_limit(c, Quota::RunningRuns, account_id, max_running)?;
    let run = runs::create(
        c,
        &NewRun {
            account_id,
            scenario_sid: scenario.sid.as_str(),
            scenario_name: &scenario.name,
            script: &scenario.script,
            kind,
            call_id: call.map(|k| k.id),
        },
        now,
    )?;
    let context = dialtone_actions::Context {
        now: now.to_rfc3339(),
        run: json!({"id": run.sid.as_str(), "type": kind}),
        scenario: json!({"sid": scenario.sid.as_str(), "name": scenario.name}),
        call: call.map(crate::voice::cdr::call_object),
        sms,
        input,
    };
    let stored = Stored::Start {
        branch: kind.entry_branch().to_owned(),
        context,
    };
    let text = serde_json::to_string(&stored).map_err(AppError::internal)?;
    runs::set_start(c, run.id, &text, lease)?;
    Ok(runs::by_id(c, run.id)?.unwrap_or(run))
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
