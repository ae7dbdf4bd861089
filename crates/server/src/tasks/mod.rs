//! The task engine: account jobs (`calls-export`, `recordings-update`, `recordings-delete`)
//! claimed with a lease, advanced one slice per claim, each slice committed with its
//! progress; every status move emits `job.status_update`; a cancel lands at the next slice.

pub(crate) mod export;
pub(crate) mod limits;

use dialtone_domain::Timestamp;
use dialtone_store::tasks::{self, Task};
use dialtone_store::{Conn, events, recordings};
use serde_json::{Value, json};

use crate::error::{AppError, ErrorCode};
use crate::state::AppState;

use limits::LEASE_MS;
pub(crate) use limits::SLICE;

/// The task object of v2.0.
pub(crate) fn view(t: &Task) -> Value {
    json!({
        "taskid": t.taskid,
        "type": t.kind,
        "status": t.status,
        "progress": {"done": t.done, "total": t.total},
        "result": t.result.as_deref().and_then(|r| serde_json::from_str::<Value>(r).ok()),
        "error": t.error,
        "created": t.created.to_rfc3339(),
        "updated": t.updated.to_rfc3339(),
    })
}

/// The earlier Job object, of JSON-RPC `jobs.get` and of `job.status_update`:
/// `{hash, type, status, progress, result}`, `progress` in whole percent.
pub(crate) fn legacy(t: &Task) -> Value {
    let percent = if t.status == "DONE" {
        100
    } else if t.total > 0 {
        (t.done.saturating_mul(100) / t.total).clamp(0, 99)
    } else {
        0
    };
    json!({
        "hash": t.taskid.to_ascii_uppercase(),
        "type": t.kind,
        "status": t.status,
        "progress": percent,
        "result": t.result.as_deref().and_then(|r| serde_json::from_str::<Value>(r).ok()),
    })
}

/// Moves a task and emits `job.status_update`; false when it had already ended.
pub(crate) fn move_to(
    c: &mut dyn Conn,
    task: &Task,
    status: &str,
    result: Option<&str>,
    error: Option<&str>,
    now: Timestamp,
) -> Result<bool, AppError> {
    if !tasks::set_status(c, task.id, status, result, error, now)? {
        return Ok(false);
    }
    if let Some(t) = tasks::by_id(c, task.id)? {
        events::emit(
            c,
            t.account_id,
            "job.status_update",
            &legacy(&t).to_string(),
            now,
        )?;
    }
    Ok(true)
}

/// Creates a task (PENDING) and wakes the workers.
pub(crate) async fn start(
    state: &AppState,
    account_id: i64,
    kind: &'static str,
    params: Value,
    total: i64,
) -> Result<Task, AppError> {
    let now = state.clock.now();
    let task = state
        .store
        .write(move |c| {
            Ok::<_, AppError>(tasks::create(
                c,
                account_id,
                kind,
                &params.to_string(),
                total,
                now,
            )?)
        })
        .await?;
    state.wake.notify_one();
    Ok(task)
}

/// Cancels a task: PENDING at once, RUNNING at its next safe point; 400
/// `task_not_cancellable` otherwise.
pub(crate) async fn cancel(
    state: &AppState,
    account_id: i64,
    taskid: String,
) -> Result<(), AppError> {
    let now = state.clock.now();
    state
        .store
        .write(move |c| {
            let t =
                tasks::get(c, account_id, &taskid)?.ok_or_else(|| AppError::not_found("task"))?;
            match t.status.as_str() {
                "PENDING" => {
                    move_to(c, &t, "CANCELED", None, None, now)?;
                }
                "RUNNING" => tasks::request_cancel(c, t.id)?,
                other => {
                    return Err(AppError::new(
                        ErrorCode::TaskNotCancellable,
                        format!(
                            "the task is {other}: only PENDING or RUNNING tasks can be cancelled"
                        ),
                    ));
                }
            }
            Ok(())
        })
        .await
}

/// Advances every claimable task by one slice; returns how many advanced.
pub(crate) async fn tick(state: &AppState) -> anyhow::Result<usize> {
    let now = state.clock.now();
    let claimed = state
        .store
        .background()
        .write(move |c| tasks::claim(c, now, LEASE_MS, 20))
        .await?;
    let n = claimed.len();
    if n == 0 {
        return Ok(0);
    }
    let secret = export::secret(state).await?;
    for task in claimed {
        let (st, secret) = (state.clone(), secret.clone());
        state
            .store
            .background()
            .write(move |c| slice(c, &st, &task, &secret))
            .await
            .map_err(|e| anyhow::anyhow!("{e}"))?;
    }
    Ok(n)
}

/// One slice of a task, in one transaction: the safe point of cancels and crashes.
fn slice(c: &mut dyn Conn, state: &AppState, task: &Task, secret: &str) -> Result<(), AppError> {
    let now = state.clock.now();
    let Some(task) = tasks::lock(c, task.id)? else {
        return Ok(());
    };
    if !matches!(task.status.as_str(), "PENDING" | "RUNNING") {
        // Another runner finished it since this one claimed it.
        return Ok(());
    }
    if task.cancel_requested {
        move_to(c, &task, "CANCELED", None, None, now)?;
        return Ok(());
    }
    if task.status == "PENDING" {
        move_to(c, &task, "RUNNING", None, None, now)?;
    }
    let params: Value = serde_json::from_str(&task.params).unwrap_or(Value::Null);
    let finished = match task.kind.as_str() {
        "calls-export" => export::slice(c, state, &task, &params, secret, now)?,
        "recordings-update" | "recordings-delete" => bulk_slice(c, &task, &params, now)?,
        other => {
            move_to(
                c,
                &task,
                "ERROR",
                None,
                Some(&format!("unknown task type {other}")),
                now,
            )?;
            return Ok(());
        }
    };
    if let Some(result) = finished {
        move_to(c, &task, "DONE", Some(&result.to_string()), None, now)?;
    }
    Ok(())
}

/// A slice of a bulk recordings change; the result once every recording is done.
fn bulk_slice(
    c: &mut dyn Conn,
    task: &Task,
    params: &Value,
    now: Timestamp,
) -> Result<Option<Value>, AppError> {
    let sids: Option<Vec<String>> = params.get("sids").and_then(Value::as_array).map(|a| {
        a.iter()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect()
    });
    let batch = recordings::slice(c, task.account_id, sids.as_deref(), task.cursor, SLICE)?;
    let read = params.get("read").and_then(Value::as_bool).unwrap_or(true);
    for (_, sid) in &batch {
        if task.kind == "recordings-delete" {
            recordings::delete(c, task.account_id, sid)?;
        } else {
            recordings::set_read(c, task.account_id, sid, read, now)?;
        }
    }
    let done = task.done + batch.len() as i64;
    let cursor = batch.last().map_or(task.cursor, |(id, _)| *id);
    tasks::advance(c, task.id, cursor, done, task.total.max(done), now)?;
    if (batch.len() as i64) < SLICE {
        return Ok(Some(json!({"count": done})));
    }
    Ok(None)
}
