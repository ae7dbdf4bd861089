//! Actions scenarios: `GET/POST /actions`, `GET/PATCH/DELETE /actions/{sid}`, the number
//! attachments, the runs (`POST /actions/{sid}/runs`, `GET/DELETE .../runs/{runid}`) and the
//! grammar as JSON Schema (`GET /actions/schema.json`).

use axum::Json;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use dialtone_domain::Sid;
use dialtone_domain::run::{RunKind, RunStatus};
use dialtone_store::numbers::owned;
use dialtone_store::runs::{self, Run};
use dialtone_store::scenarios::{self, Scenario};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};

use super::common::{NameCreatedUpdated, SortOrder, paging, path_sid};
use super::numbers::path_number;
use crate::error::{AppError, AppResult};
use crate::http::auth::{Caller, SendCaller, may_spend};
use crate::http::extract::{Checks, JsonBody, QueryString, optional_json_body};
use crate::http::search::{SearchResult, page};
use crate::scenarios::driver::{drive, drive_new};
use crate::scenarios::runs::{ApiStart, ApiStarted};
use crate::scenarios::stored::Trigger;
use crate::state::AppState;

/// A number attached to a scenario.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct AttachedNumberView {
    /// E.164.
    pub e164: String,
    /// Class.
    pub class: String,
    /// Type.
    #[serde(rename = "type")]
    pub kind: String,
    /// Country code.
    pub country: String,
    /// When it was bought.
    pub assigned: Option<String>,
}

/// An Actions scenario.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct ScenarioView {
    /// Identifier.
    pub sid: String,
    /// Name.
    pub name: String,
    /// The YAML script.
    pub script: String,
    /// Always `yaml`.
    pub format: String,
    /// Grammar version, `1.0`.
    pub version: String,
    /// Attached numbers.
    pub numbers: Vec<AttachedNumberView>,
    /// Creation time.
    pub created: String,
    /// Last change.
    pub updated: String,
}

fn view(s: Scenario, numbers: Vec<scenarios::AttachedNumber>) -> ScenarioView {
    ScenarioView {
        sid: s.sid.to_string(),
        name: s.name,
        script: s.script,
        format: "yaml".into(),
        version: "1.0".into(),
        numbers: numbers
            .into_iter()
            .map(|n| AttachedNumberView {
                e164: n.e164,
                class: n.class,
                kind: n.kind,
                country: n.country,
                assigned: n.assigned.map(|t| t.to_rfc3339()),
            })
            .collect(),
        created: s.created.to_rfc3339(),
        updated: s.updated.to_rfc3339(),
    }
}

/// A minimal valid script, the document's example.
fn example_script() -> &'static str {
    "branches:\n  api-initiated:\n    actions:\n      - action: log@v1\n        params: {message: hello}\n"
}

/// Create body of a scenario.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ScenarioCreate {
    /// Name, 1 to 64 characters.
    #[schema(min_length = 1, max_length = 64)]
    pub name: String,
    /// The YAML script, 1 to 32768 characters, a valid scenario (see
    /// `/actions/schema.json`; 400 `invalid_scenario` otherwise).
    #[schema(min_length = 1, max_length = 32768, example = example_script)]
    pub script: String,
    /// Only `yaml` (any case).
    #[schema(pattern = "^[yY][aA][mM][lL]$")]
    pub format: Option<String>,
}

/// Update body of a scenario.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ScenarioPatch {
    /// Name, 1 to 64 characters.
    #[schema(min_length = 1, max_length = 64)]
    pub name: Option<String>,
    /// Script: a valid scenario of 1 to 32768 characters.
    #[schema(min_length = 1, max_length = 32768, example = example_script)]
    pub script: Option<String>,
}

/// Search filters of scenarios.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct ScenarioQuery {
    /// Part of the name (at most 64 characters).
    #[param(max_length = 64)]
    name: Option<String>,
    /// Sort key (default `updated`).
    #[param(value_type = Option<NameCreatedUpdated>)]
    sort: Option<String>,
    /// Sort direction (default `desc`).
    #[param(value_type = Option<SortOrder>)]
    order: Option<String>,
    /// Hits to skip.
    #[param(value_type = Option<i64>, minimum = 0, maximum = 1000000000)]
    offset: Option<String>,
    /// Hits per page, 1 to 100 (default 10).
    #[param(value_type = Option<i64>, minimum = 1, maximum = 100)]
    limit: Option<String>,
}

#[derive(Clone, Copy)]
enum Sort {
    Name,
    Created,
    Updated,
}

async fn with_numbers(state: &AppState, s: Scenario) -> AppResult<ScenarioView> {
    let id = s.id;
    let numbers = state.store.read(move |c| scenarios::numbers(c, id)).await?;
    Ok(view(s, numbers))
}

/// Search scenarios.
#[utoipa::path(get, path = "/actions", tag = "Actions", params(ScenarioQuery),
    responses((status = 200, description = "a page of scenarios", body = SearchResult<ScenarioView>)))]
pub(crate) async fn search(
    State(state): State<AppState>,
    caller: Caller,
    QueryString(q): QueryString<ScenarioQuery>,
) -> AppResult<Json<SearchResult<ScenarioView>>> {
    let mut checks = Checks::default();
    let name = checks
        .text("name", q.name.as_deref(), 0, 64)
        .map(str::to_owned);
    let page = page(
        &mut checks,
        q.sort.as_deref(),
        &[
            ("name", Sort::Name),
            ("created", Sort::Created),
            ("updated", Sort::Updated),
        ],
        Sort::Updated,
        q.order.as_deref(),
        q.offset.as_deref(),
        q.limit.as_deref(),
    );
    checks.finish()?;
    let paging = paging(&page, |s| match s {
        Sort::Name => "name",
        Sort::Created => "created",
        Sort::Updated => "updated",
    });
    let account = caller.account.id;
    let (total, hits) = state
        .store
        .read(move |c| {
            let (total, hits) = scenarios::search(
                c,
                account,
                name.as_deref().filter(|n| !n.is_empty()),
                &paging,
            )?;
            let mut out = Vec::with_capacity(hits.len());
            for s in hits {
                let numbers = scenarios::numbers(c, s.id)?;
                out.push(view(s, numbers));
            }
            Ok::<_, AppError>((total, out))
        })
        .await?;
    Ok(Json(SearchResult::new(&page, total, hits)))
}

/// Create a scenario (the script is parsed and validated).
#[utoipa::path(post, path = "/actions", tag = "Actions", request_body = ScenarioCreate,
    responses((status = 201, description = "created", body = ScenarioView)))]
pub(crate) async fn create(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(b): JsonBody<ScenarioCreate>,
) -> AppResult<(StatusCode, Json<ScenarioView>)> {
    let mut checks = Checks::default();
    checks.text("name", Some(&b.name), 1, 64);
    if let Some(f) = &b.format
        && !f.eq_ignore_ascii_case("yaml")
    {
        checks.fail("format", "only yaml is supported");
    }
    checks.finish()?;
    crate::scenarios::validate::validate(&state, caller.account.id, &b.script).await?;
    let (account, now) = (caller.account.id, state.clock.now());
    let config = state.config.clone();
    let s = state
        .store
        .write(move |c| {
            crate::quotas::check(c, &config, crate::quotas::Quota::Scenarios, account)?;
            Ok::<_, AppError>(scenarios::create(c, account, &b.name, &b.script, now)?)
        })
        .await?;
    Ok((StatusCode::CREATED, Json(view(s, Vec::new()))))
}

async fn find(state: &AppState, account: i64, sid: &str) -> AppResult<Scenario> {
    let sid = path_sid(sid, "scenario")?;
    state
        .store
        .read(move |c| scenarios::get(c, account, &sid))
        .await?
        .ok_or_else(|| AppError::not_found("scenario"))
}

/// Get a scenario.
#[utoipa::path(get, path = "/actions/{sid}", tag = "Actions", params(("sid" = String, Path, description = "scenario sid")),
    responses((status = 200, description = "the scenario", body = ScenarioView)))]
pub(crate) async fn get(
    State(state): State<AppState>,
    caller: Caller,
    Path(sid): Path<String>,
) -> AppResult<Json<ScenarioView>> {
    let s = find(&state, caller.account.id, &sid).await?;
    Ok(Json(with_numbers(&state, s).await?))
}

/// Change a scenario's name or script (runs already started keep their script).
#[utoipa::path(patch, path = "/actions/{sid}", tag = "Actions", params(("sid" = String, Path, description = "scenario sid")),
    request_body = ScenarioPatch, responses((status = 200, description = "the scenario", body = ScenarioView)))]
pub(crate) async fn update(
    State(state): State<AppState>,
    caller: Caller,
    Path(sid): Path<String>,
    JsonBody(b): JsonBody<ScenarioPatch>,
) -> AppResult<Json<ScenarioView>> {
    let sid = path_sid(&sid, "scenario")?;
    let mut checks = Checks::default();
    if let Some(name) = &b.name {
        checks.text("name", Some(name), 1, 64);
    }
    checks.finish()?;
    if let Some(script) = &b.script {
        crate::scenarios::validate::validate(&state, caller.account.id, script).await?;
    }
    let (account, now) = (caller.account.id, state.clock.now());
    state.known_scenarios.forget(account, sid.as_str());
    let s = state
        .store
        .write(move |c| {
            scenarios::update(
                c,
                account,
                &sid,
                b.name.as_deref(),
                b.script.as_deref(),
                now,
            )
        })
        .await?
        .ok_or_else(|| AppError::not_found("scenario"))?;
    Ok(Json(with_numbers(&state, s).await?))
}

/// Delete a scenario; its numbers are detached.
#[utoipa::path(delete, path = "/actions/{sid}", tag = "Actions", params(("sid" = String, Path, description = "scenario sid")),
    responses((status = 204, description = "deleted")))]
pub(crate) async fn delete(
    State(state): State<AppState>,
    caller: Caller,
    Path(sid): Path<String>,
) -> AppResult<StatusCode> {
    let sid = path_sid(&sid, "scenario")?;
    let account = caller.account.id;
    state.known_scenarios.forget(account, sid.as_str());
    if state
        .store
        .write(move |c| scenarios::delete(c, account, &sid))
        .await?
    {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(AppError::not_found("scenario"))
    }
}

/// Attach a number to the scenario.
#[utoipa::path(put, path = "/actions/{sid}/numbers/{number}", tag = "Actions",
    params(("sid" = String, Path, description = "scenario sid"), ("number" = String, Path, description = "E.164 number")),
    responses((status = 204, description = "attached")))]
pub(crate) async fn attach_number(
    State(state): State<AppState>,
    caller: Caller,
    Path((sid, number)): Path<(String, String)>,
) -> AppResult<StatusCode> {
    let sid = path_sid(&sid, "scenario")?;
    let e164 = path_number(&number)?;
    crate::numbers::attach(&state, caller.account.id, e164, Some(Some(sid)), None).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Detach a number from the scenario (404 when it is not attached to it).
#[utoipa::path(delete, path = "/actions/{sid}/numbers/{number}", tag = "Actions",
    params(("sid" = String, Path, description = "scenario sid"), ("number" = String, Path, description = "E.164 number")),
    responses((status = 204, description = "detached")))]
pub(crate) async fn detach_number(
    State(state): State<AppState>,
    caller: Caller,
    Path((sid, number)): Path<(String, String)>,
) -> AppResult<StatusCode> {
    let s = find(&state, caller.account.id, &sid).await?;
    let e164 = path_number(&number)?;
    let account = caller.account.id;
    state
        .store
        .write(move |c| {
            let attached = scenarios::numbers(c, s.id)?.iter().any(|n| n.e164 == e164);
            if !attached {
                return Err(AppError::not_found("number attached to this scenario"));
            }
            owned::set_scenario(c, account, &e164, None)?;
            Ok(())
        })
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Start input of a run.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RunStart {
    /// Variables (`$name` keys) that override the script's `variables`.
    #[schema(schema_with = variables_schema)]
    pub variables: Option<serde_json::Map<String, Value>>,
}

fn variables_schema() -> utoipa::openapi::Object {
    use utoipa::openapi::ObjectBuilder;
    use utoipa::openapi::schema::Type;
    ObjectBuilder::new()
        .schema_type(Type::Object)
        .description(Some(
            "Variables (`$name` keys) that override the script's `variables`.",
        ))
        .property_names(Some(
            ObjectBuilder::new()
                .schema_type(Type::String)
                .pattern(Some(r"^\$.+$")),
        ))
        .build()
}

/// The answer to a run start.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RunStarted {
    /// Run id.
    pub run_id: String,
    /// Scenario sid.
    pub scenario: String,
    /// `running`.
    pub status: String,
    /// Start time.
    pub created: String,
}

/// A run's status.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RunView {
    /// Run id.
    pub run_id: String,
    /// Scenario sid.
    pub scenario: String,
    /// `inbound-call`, `inbound-sms` or `api`.
    #[serde(rename = "type")]
    #[schema(value_type = String)]
    pub kind: RunKind,
    /// `running`, `completed`, `failed` or `stopped`.
    #[schema(value_type = String)]
    pub status: RunStatus,
    /// Variables with their values.
    #[schema(value_type = Object)]
    pub variables: Value,
    /// Log lines `{at, level, message}`.
    #[schema(value_type = Vec<Object>)]
    pub log: Value,
    /// Why it failed.
    pub error: Option<String>,
    /// Start.
    pub started: String,
    /// End.
    pub ended: Option<String>,
}

/// Renders a stored run.
pub(crate) fn run_view(r: &Run) -> RunView {
    RunView {
        run_id: r.sid.to_string(),
        scenario: r.scenario_sid.clone(),
        kind: r.kind,
        status: r.status,
        variables: serde_json::from_str(&r.variables)
            .unwrap_or_else(|_| Value::Object(Default::default())),
        log: serde_json::from_str(&r.log).unwrap_or_else(|_| Value::Array(Vec::new())),
        error: r.error.clone(),
        started: r.started.to_rfc3339(),
        ended: r.ended.map(|t| t.to_rfc3339()),
    }
}

/// Starts the `api-initiated` branch of a scenario the request read; the run goes on in the
/// background.
pub(crate) async fn start_run(
    state: &AppState,
    account: i64,
    s: Scenario,
    variables: serde_json::Map<String, Value>,
) -> AppResult<RunStarted> {
    match start_as(state, account, s, false, None, variables).await? {
        ApiStarted::Run(run) => Ok(launch(state, *run)),
        ApiStarted::AuthChanged | ApiStarted::ScenarioChanged => Err(AppError::internal(
            "a run started from what the request read was found stale",
        )),
    }
}

/// Creates a run of the scenario's `api-initiated` branch (see `ApiStart` for `kept` and
/// `auth_version`, taken without a read and checked by the write).
async fn start_as(
    state: &AppState,
    account: i64,
    s: Scenario,
    kept: bool,
    auth_version: Option<i64>,
    variables: serde_json::Map<String, Value>,
) -> AppResult<ApiStarted> {
    let parsed = state.parsed.get(&s.script).map_err(AppError::internal)?;
    if !parsed.has_branch("api-initiated") {
        return Err(AppError::invalid(
            "scenario",
            "the scenario has no api-initiated branch",
        ));
    }
    let now = state.clock.now();
    state
        .run_starts
        .run(ApiStart {
            max_running: state.config.quota_running_runs,
            account_id: account,
            scenario: s,
            scenario_kept: kept,
            auth_version,
            input: variables,
            lease: now.plus_ms(30_000),
            now,
        })
        .await
}

/// Drives a run just created in the background, and answers with it.
fn launch(state: &AppState, run: Run) -> RunStarted {
    let started = RunStarted {
        run_id: run.sid.to_string(),
        scenario: run.scenario_sid.clone(),
        status: "running".into(),
        created: run.started.to_rfc3339(),
    };
    let st = state.clone();
    tokio::spawn(async move {
        let sid = run.sid.clone();
        if let Err(e) = drive_new(st, run, vec![Trigger::Due]).await {
            tracing::warn!(run = %sid, error = %format!("{e:#}"), "a run could not advance");
        }
    });
    started
}

/// The account's scenario for a run, from this node's cache when kept there (the write
/// checks it), else read and kept; with whether it came from the cache.
async fn scenario_for_run(
    state: &AppState,
    account: i64,
    sid: &Sid,
) -> AppResult<(Scenario, bool)> {
    if let Some(s) = state.known_scenarios.get(account, sid.as_str()) {
        return Ok((s, true));
    }
    let sid = sid.clone();
    let s = state
        .store
        .read(move |c| scenarios::get(c, account, &sid))
        .await?
        .ok_or_else(|| AppError::not_found("scenario"))?;
    state.known_scenarios.keep(&s);
    Ok((s, false))
}

/// `e`, the answer of a request refused on what is stored (a scenario not found, a script
/// without the branch), once the request is authenticated when it assumed its account: a
/// revoked key learns nothing stored since its revocation (it gets 401 instead).
async fn refused(
    state: &AppState,
    caller: &SendCaller,
    headers: &HeaderMap,
    assumed: Option<i64>,
    e: AppError,
) -> AppError {
    if assumed.is_some()
        && let Err(auth) = caller.confirm(state, headers).await
    {
        return auth;
    }
    e
}

/// Run the scenario's `api-initiated` branch.
#[utoipa::path(post, path = "/actions/{sid}/runs", tag = "Actions", params(("sid" = String, Path, description = "scenario sid")),
    request_body(content = RunStart, description = "optional: an empty body starts the run with the script's variables"), responses((status = 202, description = "started", body = RunStarted)))]
pub(crate) async fn run(
    State(state): State<AppState>,
    caller: SendCaller,
    headers: HeaderMap,
    Path(sid): Path<String>,
    body: axum::body::Bytes,
) -> AppResult<(StatusCode, Json<RunStarted>)> {
    let sid = path_sid(&sid, "scenario")?;
    let mut account = caller.account.clone();
    let mut assumed = caller.assumed;
    // Another account's scenario is not found before its body is read.
    let (mut s, mut kept) = match scenario_for_run(&state, account.id, &sid).await {
        Ok(found) => found,
        Err(e) => return Err(refused(&state, &caller, &headers, assumed, e).await),
    };
    may_spend(&account)?;
    let input: RunStart = optional_json_body(&body)?;
    let mut checks = Checks::default();
    let variables = input.variables.unwrap_or_default();
    for name in variables.keys() {
        if !name.starts_with('$') || name.len() < 2 {
            checks.fail(&format!("variables.{name}"), "variable names begin with $");
        }
    }
    checks.finish()?;
    // Each stale answer reads what it found stale; the third try assumes nothing.
    for _ in 0..3 {
        let started = start_as(
            &state,
            account.id,
            s.clone(),
            kept,
            assumed,
            variables.clone(),
        )
        .await;
        let started = match started {
            Ok(started) => started,
            Err(e) => return Err(refused(&state, &caller, &headers, assumed, e).await),
        };
        match started {
            ApiStarted::Run(run) => return Ok((StatusCode::ACCEPTED, Json(launch(&state, *run)))),
            ApiStarted::AuthChanged => {
                let confirmed = caller.confirm(&state, &headers).await?;
                may_spend(&confirmed.account)?;
                assumed = None;
                if confirmed.account.id != account.id {
                    state.known_scenarios.forget(account.id, sid.as_str());
                    (s, kept) = scenario_for_run(&state, confirmed.account.id, &sid).await?;
                }
                account = confirmed.account;
            }
            ApiStarted::ScenarioChanged => {
                state.known_scenarios.forget(account.id, sid.as_str());
                (s, kept) = scenario_for_run(&state, account.id, &sid).await?;
            }
        }
    }
    Err(AppError::internal(
        "a run start was found stale three times",
    ))
}

async fn find_run(state: &AppState, account: i64, sid: &str, run: &str) -> AppResult<Run> {
    let scenario = path_sid(sid, "scenario")?;
    let run_sid = Sid::parse(run)
        .filter(|s| s.as_str() == run)
        .ok_or_else(|| AppError::not_found("run"))?;
    state
        .store
        .read(move |c| runs::get(c, account, scenario.as_str(), &run_sid))
        .await?
        .ok_or_else(|| AppError::not_found("run"))
}

/// A run's status, variables and log.
#[utoipa::path(get, path = "/actions/{sid}/runs/{runid}", tag = "Actions",
    params(("sid" = String, Path, description = "scenario sid"), ("runid" = String, Path, description = "run id")),
    responses((status = 200, description = "the run", body = RunView)))]
pub(crate) async fn get_run(
    State(state): State<AppState>,
    caller: Caller,
    Path((sid, runid)): Path<(String, String)>,
) -> AppResult<Json<RunView>> {
    let r = find_run(&state, caller.account.id, &sid, &runid).await?;
    Ok(Json(run_view(&r)))
}

/// Stop a run.
#[utoipa::path(delete, path = "/actions/{sid}/runs/{runid}", tag = "Actions",
    params(("sid" = String, Path, description = "scenario sid"), ("runid" = String, Path, description = "run id")),
    responses((status = 204, description = "stopped")))]
pub(crate) async fn stop_run(
    State(state): State<AppState>,
    caller: Caller,
    Path((sid, runid)): Path<(String, String)>,
) -> AppResult<StatusCode> {
    let mut r = find_run(&state, caller.account.id, &sid, &runid).await?;
    // A run that is being started or advanced meanwhile changes version: read it again.
    for _ in 0..100 {
        if r.status.is_final() {
            break;
        }
        if crate::scenarios::stored::has_started(r.state.as_deref()) {
            drive(
                state.clone(),
                r.id,
                vec![Trigger::Event(dialtone_actions::Event::Stop)],
            )
            .await
            .map_err(AppError::internal)?;
        } else {
            let (id, version, now) = (r.id, r.version, state.clock.now());
            state
                .store
                .write(move |c| {
                    runs::save(
                        c,
                        id,
                        version,
                        &runs::Progress {
                            status: RunStatus::Stopped,
                            state: None,
                            variables: "{}",
                            log: "[]",
                            error: None,
                            pending: "[]",
                            next_at: None,
                        },
                        now,
                    )
                })
                .await?;
        }
        let id = r.id;
        r = state
            .store
            .read(move |c| runs::by_id(c, id))
            .await?
            .ok_or_else(|| AppError::not_found("run"))?;
    }
    Ok(StatusCode::NO_CONTENT)
}

/// The Actions grammar as JSON Schema.
#[utoipa::path(get, path = "/actions/schema.json", tag = "Actions",
    responses((status = 200, description = "JSON Schema of scenario scripts", body = Object)))]
pub(crate) async fn schema(_caller: Caller) -> Json<Value> {
    Json(dialtone_actions::schema())
}
