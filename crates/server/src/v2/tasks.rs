//! Tasks: `GET /tasks/{taskid}`, `DELETE /tasks/{taskid}`, `POST /calls/export`, and the
//! signed CSV download `GET /downloads/{taskid}` (no credentials: the URL is the key).

use axum::Json;
use axum::body::Body;
use axum::extract::{Path, RawQuery, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use dialtone_store::tasks;
use serde::Deserialize;
use serde_json::{Value, json};
use utoipa::IntoParams;

use crate::error::{AppError, AppResult};
use crate::http::auth::Caller;
use crate::http::extract::{Checks, QueryString, query};
use crate::state::AppState;
use crate::tasks::export;

/// Get a task: status, progress, result.
#[utoipa::path(get, path = "/tasks/{taskid}", tag = "Tasks", params(("taskid" = String, Path, description = "task id")),
    responses((status = 200, description = "the task", body = Object)))]
pub(crate) async fn get(
    State(state): State<AppState>,
    caller: Caller,
    Path(taskid): Path<String>,
) -> AppResult<Json<Value>> {
    let account = caller.account.id;
    let t = state
        .store
        .read(move |c| tasks::get(c, account, &taskid))
        .await?
        .ok_or_else(|| AppError::not_found("task"))?;
    Ok(Json(crate::tasks::view(&t)))
}

/// Cancel a PENDING or RUNNING task.
#[utoipa::path(delete, path = "/tasks/{taskid}", tag = "Tasks", params(("taskid" = String, Path, description = "task id")),
    responses((status = 204, description = "cancelled")))]
pub(crate) async fn cancel(
    State(state): State<AppState>,
    caller: Caller,
    Path(taskid): Path<String>,
) -> AppResult<StatusCode> {
    crate::tasks::cancel(&state, caller.account.id, taskid).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Query of a calls export.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct ExportQuery {
    /// `inbound` or `outbound`.
    #[param(required = true)]
    direction: Option<String>,
    /// Start of the range (RFC 3339).
    #[param(required = true, format = DateTime)]
    from: Option<String>,
    /// End of the range (RFC 3339), after `from` and at most 31 days after it (400
    /// otherwise).
    #[param(required = true, format = DateTime)]
    to: Option<String>,
    /// Only calls handled by this scenario (its sid; 404 when there is none).
    scenario: Option<String>,
    /// Only calls of this owned number (404 when the account has no such number).
    /// Any E.164 number valid in its country's numbering plan is accepted (400 otherwise);
    /// no pattern can state the plans, so the pattern is the fictional drama range, always
    /// valid and routed by the simulated network.
    #[param(pattern = r"^\+447700900[0-9]{3}$", example = "+447700900123")]
    number: Option<String>,
}

/// Export calls to CSV (a task).
#[utoipa::path(post, path = "/calls/export", tag = "Calls", params(ExportQuery),
    responses((status = 202, description = "the task id", body = Object)))]
pub(crate) async fn export_calls(
    State(state): State<AppState>,
    caller: Caller,
    QueryString(q): QueryString<ExportQuery>,
) -> AppResult<(StatusCode, Json<Value>)> {
    let mut checks = Checks::default();
    let direction = checks
        .required("direction", q.direction.as_deref())
        .map(str::to_owned);
    if let Some(d) = &direction
        && d != "inbound"
        && d != "outbound"
    {
        checks.fail("direction", "must be inbound or outbound");
    }
    let f = checks.required("from", q.from.as_deref());
    let from = checks.datetime("from", f);
    let t = checks.required("to", q.to.as_deref());
    let to = checks.datetime("to", t);
    let number = q.number.as_deref().map(|n| checks.phone("number", Some(n)));
    checks.finish()?;
    let request = export::Request {
        direction: direction.unwrap_or_default(),
        from: from.unwrap_or(dialtone_domain::Timestamp::from_millis(0)),
        to: to.unwrap_or(dialtone_domain::Timestamp::from_millis(0)),
        scenario: q.scenario,
        number: number.flatten().map(|n| n.as_str().to_owned()),
    };
    let task = export::start(&state, caller.account.id, request).await?;
    Ok((StatusCode::ACCEPTED, Json(json!({"taskid": task.taskid}))))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Signed {
    expires: String,
    signature: String,
}

/// `GET /v2.0/downloads/{taskid}?expires=&signature=`: the export's CSV, streamed slice by
/// slice; 404 when the signature is wrong, the link has expired or the task is not done.
#[utoipa::path(get, path = "/downloads/{taskid}", tag = "Tasks",
    params(
        ("taskid" = String, Path, description = "task id"),
        ("expires" = i64, Query, description = "expiry of the link (ms since the epoch), as the task's result gives it"),
        ("signature" = String, Query, description = "signature of the link, as the task's result gives it"),
    ),
    security(()),
    responses(
        (status = 200, description = "the CSV of a done calls export", content_type = "text/csv", body = String),
        (status = 404, description = "wrong signature, expired link, or no such done export"),
    ))]
pub(crate) async fn download(
    State(state): State<AppState>,
    Path(taskid): Path<String>,
    RawQuery(raw): RawQuery,
) -> Response {
    let not_found = || AppError::not_found("download").into_response();
    let Ok(signed) = query::<Signed>(raw.as_deref()) else {
        return not_found();
    };
    let Ok(expires) = signed.expires.parse::<i64>() else {
        return not_found();
    };
    let Ok(secret) = export::secret(&state).await else {
        return not_found();
    };
    if !export::verify(&secret, &taskid, expires, &signed.signature)
        || state.clock.now().millis() >= expires
    {
        return not_found();
    }
    let tid = taskid.clone();
    let task = state
        .store
        .read(move |c| {
            c.query_opt(
                "SELECT id FROM tasks WHERE taskid = $1 AND status = 'DONE' AND type = 'calls-export'",
                &[tid.as_str().into()],
            )
        })
        .await;
    let Ok(Some(row)) = task else {
        return not_found();
    };
    let Ok(id) = row.int(0) else {
        return not_found();
    };
    let store = state.store.clone();
    let stream = futures_util::stream::unfold(0i64, move |seq| {
        let store = store.clone();
        async move {
            match store.read(move |c| tasks::chunk(c, id, seq)).await {
                Ok(Some(data)) => Some((Ok::<_, std::io::Error>(data), seq + 1)),
                Ok(None) => None,
                Err(e) => Some((Err(std::io::Error::other(e.to_string())), i64::MAX)),
            }
        }
    });
    (
        [
            (header::CONTENT_TYPE, "text/csv; charset=utf-8".to_owned()),
            (
                header::CONTENT_DISPOSITION,
                format!("attachment; filename=\"calls-{taskid}.csv\""),
            ),
        ],
        Body::from_stream(stream),
    )
        .into_response()
}
