//! `jobs.get [jobId]` and `jobs.cancel [jobId]`: the JSON-RPC names of `/v2.0/tasks`, with
//! the earlier Job object `{hash, type, status, progress, result}`.

use dialtone_store::tasks;

use super::call::Call;
use super::error::{RpcError, codes};
use serde_json::Value;

fn taskid(call: &Call<'_>) -> Result<String, RpcError> {
    Ok(call.string(0, "jobId")?.to_ascii_lowercase())
}

/// `jobs.get [jobId]` -> Job.
pub(super) async fn get(call: &Call<'_>) -> Result<Value, RpcError> {
    let (taskid, account) = (taskid(call)?, call.caller.account.id);
    let task = call
        .state
        .store
        .read(move |c| tasks::get(c, account, &taskid))
        .await?
        .ok_or_else(|| RpcError::new(codes::NOT_FOUND, "job not found"))?;
    Ok(crate::tasks::legacy(&task))
}

/// `jobs.cancel [jobId]` -> true; a job that has ended is error 151.
pub(super) async fn cancel(call: &Call<'_>) -> Result<Value, RpcError> {
    let taskid = taskid(call)?;
    crate::tasks::cancel(call.state, call.caller.account.id, taskid).await?;
    Ok(Value::Bool(true))
}
