//! `apps.*` (package `ACTIONS10`: Actions scenarios) and `actions.start`, the JSON-RPC names
//! of `/v2.0/actions` (App objects use `hash`, `p: {format, script}` and legacy dates).

use dialtone_domain::Sid;
use dialtone_store::numbers::owned;
use dialtone_store::scenarios::{self, Scenario};
use serde_json::{Value, json};

use super::call::Call;
use super::error::{RpcError, codes};
use crate::error::ErrorCode;
use crate::numbers::legacy::did_id;

/// The only package: Actions scenarios.
pub(super) const PACKAGE: &str = "ACTIONS10";

fn app(s: &Scenario, dids: Vec<Value>) -> Value {
    json!({
        "hash": s.sid.as_str().to_uppercase(),
        "name": s.name,
        "package": {"name": PACKAGE, "type": "ACTIONS", "has_did": true},
        "p": {"format": "YAML", "script": s.script},
        "did": dids,
        "date_creation": s.created.to_legacy(),
        "date_update": s.updated.to_legacy(),
    })
}

fn sid_of(call: &Call<'_>, i: usize) -> Result<Sid, RpcError> {
    let hash = call.string(i, "hash")?;
    Sid::parse(&hash.to_lowercase()).ok_or_else(|| RpcError::new(codes::NOT_FOUND, "app not found"))
}

fn script_of(options: &Value, index: usize) -> Result<String, RpcError> {
    if let Some(f) = options.get("format").and_then(Value::as_str)
        && !f.eq_ignore_ascii_case("yaml")
    {
        return Err(RpcError::invalid_param(
            index,
            "options.format: only YAML is supported",
        ));
    }
    options
        .get("script")
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| RpcError::new(codes::MISSING_PROPERTY, "options.script is required"))
}

async fn render(call: &Call<'_>, s: Scenario) -> Result<Value, RpcError> {
    let id = s.id;
    let numbers = call
        .state
        .store
        .read(move |c| {
            let attached = scenarios::numbers(c, id)?;
            let mut out = Vec::new();
            for n in attached {
                if let Some(full) = owned::by_e164(c, &n.e164)? {
                    out.push(crate::numbers::legacy::did(&full));
                }
            }
            Ok::<_, dialtone_store::DbError>(out)
        })
        .await?;
    Ok(app(&s, numbers))
}

fn check_name(name: &str) -> Result<(), RpcError> {
    let n = name.chars().count();
    if (1..=64).contains(&n) {
        Ok(())
    } else {
        Err(RpcError::invalid_param(1, "name: 1 to 64 characters"))
    }
}

/// `apps.create [package, name, {format, script}]` -> App.
pub(super) async fn create(call: &Call<'_>) -> Result<Value, RpcError> {
    let package = call.string(0, "package")?;
    if package != PACKAGE {
        return Err(RpcError::invalid_param(
            0,
            format!("package: only {PACKAGE} is supported"),
        ));
    }
    let name = call.string(1, "name")?;
    check_name(&name)?;
    let script = script_of(call.param(2), 2)?;
    crate::scenarios::validate::validate(call.state, call.caller.account.id, &script).await?;
    let (account, now) = (call.caller.account.id, call.state.clock.now());
    let config = call.state.config.clone();
    let s = call
        .state
        .store
        .write(move |c| {
            crate::quotas::check(c, &config, crate::quotas::Quota::Scenarios, account)?;
            Ok::<_, crate::error::AppError>(scenarios::create(c, account, &name, &script, now)?)
        })
        .await?;
    Ok(app(&s, Vec::new()))
}

/// `apps.edit [hash, name, {format, script}]` -> App.
pub(super) async fn edit(call: &Call<'_>) -> Result<Value, RpcError> {
    let sid = sid_of(call, 0)?;
    let name = call.string(1, "name")?;
    check_name(&name)?;
    let script = match call.param(2) {
        Value::Null => None,
        options => Some(script_of(options, 2)?),
    };
    if let Some(s) = &script {
        crate::scenarios::validate::validate(call.state, call.caller.account.id, s).await?;
    }
    let (account, now) = (call.caller.account.id, call.state.clock.now());
    call.state.known_scenarios.forget(account, sid.as_str());
    let s = call
        .state
        .store
        .write(move |c| scenarios::update(c, account, &sid, Some(&name), script.as_deref(), now))
        .await?
        .ok_or_else(|| RpcError::new(codes::NOT_FOUND, "app not found"))?;
    render(call, s).await
}

/// `apps.delete [hash]` -> true.
pub(super) async fn delete(call: &Call<'_>) -> Result<Value, RpcError> {
    let sid = sid_of(call, 0)?;
    let account = call.caller.account.id;
    call.state.known_scenarios.forget(account, sid.as_str());
    if call
        .state
        .store
        .write(move |c| scenarios::delete(c, account, &sid))
        .await?
    {
        Ok(Value::Bool(true))
    } else {
        Err(RpcError::new(codes::NOT_FOUND, "app not found"))
    }
}

async fn find(call: &Call<'_>, sid: Sid) -> Result<Scenario, RpcError> {
    let account = call.caller.account.id;
    call.state
        .store
        .read(move |c| scenarios::get(c, account, &sid))
        .await?
        .ok_or_else(|| RpcError::new(codes::NOT_FOUND, "app not found"))
}

/// `apps.get [hash]` -> App.
pub(super) async fn get(call: &Call<'_>) -> Result<Value, RpcError> {
    let s = find(call, sid_of(call, 0)?).await?;
    render(call, s).await
}

/// `apps.get_list [showDids?]` -> every App of the account (at most 1000), newest change
/// first.
pub(super) async fn get_list(call: &Call<'_>) -> Result<Value, RpcError> {
    let show_dids = match call.param(0) {
        Value::Null => true,
        Value::Bool(b) => *b,
        _ => return Err(RpcError::invalid_param(0, "showDids must be a boolean")),
    };
    let (_, list) = page(call, None, 0, 1000).await?;
    let mut out = Vec::with_capacity(list.len());
    for s in list {
        out.push(if show_dids {
            render(call, s).await?
        } else {
            app(&s, Vec::new())
        });
    }
    Ok(Value::Array(out))
}

async fn page(
    call: &Call<'_>,
    name: Option<String>,
    offset: i64,
    limit: i64,
) -> Result<(i64, Vec<Scenario>), RpcError> {
    let account = call.caller.account.id;
    let paging = dialtone_store::search::Paging {
        sort_column: "updated",
        descending: true,
        offset,
        limit,
    };
    Ok(call
        .state
        .store
        .read(move |c| scenarios::search(c, account, name.as_deref(), &paging))
        .await?)
}

/// `apps.search [filters, options]` -> `{hits, total, offset, has_more}` of App objects,
/// newest change first. Filters: `name` (part, 1 to 64 characters) and `package`
/// (`ACTIONS10`, the only one); options: `offset`, `limit` (1 to 100, default 10).
pub(super) async fn search(call: &Call<'_>) -> Result<Value, RpcError> {
    let (filters, options) = (call.param(0), call.param(1));
    if !matches!(filters, Value::Null | Value::Object(_)) {
        return Err(RpcError::invalid_param(0, "filters must be an object"));
    }
    if !matches!(options, Value::Null | Value::Object(_)) {
        return Err(RpcError::invalid_param(1, "options must be an object"));
    }
    let name = match filters.get("name") {
        None | Some(Value::Null) => None,
        Some(Value::String(n)) if (1..=64).contains(&n.chars().count()) => Some(n.clone()),
        Some(_) => {
            return Err(RpcError::invalid_param(
                0,
                "name must be 1 to 64 characters long",
            ));
        }
    };
    let other_package = match filters.get("package") {
        None | Some(Value::Null) => false,
        Some(Value::String(p)) => p != PACKAGE,
        Some(_) => return Err(RpcError::invalid_param(0, "package must be a string")),
    };
    let offset = super::call::int_option(options, "offset", 0, 1_000_000_000)?;
    let limit = super::call::int_option(options, "limit", 10, 100)?.max(1);
    let (total, list) = if other_package {
        (0, Vec::new())
    } else {
        page(call, name, offset, limit).await?
    };
    let mut hits = Vec::with_capacity(list.len());
    for s in list {
        hits.push(render(call, s).await?);
    }
    Ok(json!({
        "hits": hits,
        "total": total,
        "offset": offset,
        "has_more": offset + (hits.len() as i64) < total,
    }))
}

async fn set_did(call: &Call<'_>, attach: bool) -> Result<Value, RpcError> {
    let sid = sid_of(call, 0)?;
    let did = call.string(1, "did_hash")?;
    let id = did_id(&did).ok_or_else(|| RpcError::new(codes::NOT_FOUND, "DID not found"))?;
    let s = find(call, sid).await?;
    let account = call.caller.account.id;
    call.state
        .store
        .write(move |c| {
            let n = owned::by_id(c, account, id)?
                .ok_or_else(|| RpcError::new(codes::NOT_FOUND, "DID not found"))?;
            if attach {
                owned::set_scenario(c, account, &n.e164, Some(&s.sid))?;
            } else if n.scenario.as_ref().is_some_and(|(sid, _)| *sid == s.sid) {
                owned::set_scenario(c, account, &n.e164, None)?;
            }
            Ok::<_, RpcError>(())
        })
        .await?;
    Ok(Value::Bool(true))
}

/// `apps.assign_did [app hash, did hash]` -> true.
pub(super) async fn assign_did(call: &Call<'_>) -> Result<Value, RpcError> {
    set_did(call, true).await
}

/// `apps.remove_did [app hash, did hash]` -> true.
pub(super) async fn remove_did(call: &Call<'_>) -> Result<Value, RpcError> {
    set_did(call, false).await
}

/// `actions.start [app hash, {variables}?]` -> `{runId, scenario, status, created}` (the
/// v2.0 start output).
pub(super) async fn start(call: &Call<'_>) -> Result<Value, RpcError> {
    let s = find(call, sid_of(call, 0)?).await?;
    if call.caller.account.status == dialtone_domain::account::AccountStatus::Suspended {
        return Err(crate::error::AppError::new(
            ErrorCode::AccountSuspended,
            "the account is suspended: reads work, spending is refused",
        )
        .into());
    }
    let variables = match call.param(1) {
        Value::Null => serde_json::Map::new(),
        Value::Object(o) => match o.get("variables") {
            None | Some(Value::Null) => serde_json::Map::new(),
            Some(Value::Object(v)) => v.clone(),
            Some(_) => return Err(RpcError::invalid_param(1, "variables must be an object")),
        },
        _ => return Err(RpcError::invalid_param(1, "options must be an object")),
    };
    if variables.keys().any(|k| !k.starts_with('$') || k.len() < 2) {
        return Err(RpcError::invalid_param(1, "variable names begin with $"));
    }
    let started =
        crate::v2::actions::start_run(call.state, call.caller.account.id, s, variables).await?;
    Ok(serde_json::to_value(started).unwrap_or(Value::Null))
}
