//! Calls: `DELETE /calls/{callid}` hangs up a live call of the account.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use dialtone_store::calls;

use crate::http::auth::Caller;
use crate::http::error::{ApiError, ApiResult};
use crate::scenarios::call::{NORMAL_CLEARING, hang_up_and_drive};
use crate::state::AppState;

/// Hang up a live call (404 when the account has no such live call).
#[utoipa::path(delete, path = "/calls/{callid}", tag = "Calls", params(("callid" = String, Path, description = "call id")),
    responses((status = 204, description = "hung up")))]
pub async fn hang_up(
    State(state): State<AppState>,
    caller: Caller,
    Path(callid): Path<String>,
) -> ApiResult<StatusCode> {
    let account = caller.account.id;
    let call = state
        .store
        .read(move |c| calls::by_callid(c, &callid))
        .await?
        .filter(|k| k.account_id == account && k.status != "ended")
        .ok_or_else(|| ApiError::not_found("live call"))?;
    hang_up_and_drive(&state, call.id, NORMAL_CLEARING, "system")
        .await
        .map_err(ApiError::internal)?;
    Ok(StatusCode::NO_CONTENT)
}
