//! Calls: `DELETE /calls/{callid}` hangs up a live call of the account.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use dialtone_store::calls;

use dialtone_domain::call::{HangupSource, NORMAL_CLEARING};

use crate::error::{AppError, AppResult};
use crate::http::auth::Caller;
use crate::scenarios::call_events::hang_up_and_drive;
use crate::state::AppState;

/// Hang up a live call (404 when the account has no such live call).
#[utoipa::path(delete, path = "/calls/{callid}", tag = "Calls", params(("callid" = String, Path, description = "call id")),
    responses((status = 204, description = "hung up")))]
pub(crate) async fn hang_up(
    State(state): State<AppState>,
    caller: Caller,
    Path(callid): Path<String>,
) -> AppResult<StatusCode> {
    let account = caller.account.id;
    let call = state
        .store
        .read(move |c| calls::by_callid(c, account, &callid))
        .await?
        .filter(|k| k.status.is_live())
        .ok_or_else(|| AppError::not_found("live call"))?;
    hang_up_and_drive(&state, call.id, NORMAL_CLEARING, HangupSource::System)
        .await
        .map_err(AppError::internal)?;
    Ok(StatusCode::NO_CONTENT)
}
