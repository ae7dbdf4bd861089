//! Scripts as the API receives them: parsed and validated on the scenario engine's threads
//! in the account's turn.

use dialtone_actions::{Scenario, ScenarioError, parse_scenario};

use crate::error::{AppError, Detail, ErrorCode};
use crate::state::AppState;

/// Longest script accepted (characters).
pub(crate) const MAX_SCRIPT: usize = 32_768;

/// 400 `invalid_scenario` with the line and column of the problem.
pub(crate) fn invalid(e: &ScenarioError) -> AppError {
    let mut detail = Detail::new("script", e.message.clone());
    detail.line = Some(e.line);
    detail.column = Some(e.column);
    AppError {
        details: vec![detail],
        ..AppError::new(
            ErrorCode::InvalidScenario,
            format!("the script is not a valid scenario: {e}"),
        )
    }
}

/// Parses and validates a script on the scenario engine's threads in the account's turn
/// (never on the request threads): a hostile script costs its own account's share of the
/// engine, within the parser's node, byte and depth bounds.
pub(crate) async fn validate(
    state: &AppState,
    account: i64,
    script: &str,
) -> Result<Scenario, AppError> {
    if script.trim().is_empty() || script.chars().count() > MAX_SCRIPT {
        return Err(AppError::invalid(
            "script",
            format!("must be 1 to {MAX_SCRIPT} characters"),
        ));
    }
    let script = script.to_owned();
    state
        .engine
        .run(account, move || parse_scenario(&script))
        .await
        .map_err(AppError::internal)?
        .map_err(|e| invalid(&e))
}
