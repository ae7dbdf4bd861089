//! Actions scenarios on the server: validation of scripts, runs driven through the pure
//! interpreter (`dialtone-actions`), and the calls they handle on the simulated network.
//!
//! A run's state is stored at every step (table `runs`), so any node resumes it after a
//! restart; a step's side effects (call timeline, SMS, HTTP) happen only after the step that
//! asked for them is committed.

pub mod call;
pub mod driver;
pub mod engine;
pub mod fetch;
pub mod pending;
pub mod worker;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use dialtone_actions::{Scenario, ScenarioError, parse_scenario};

pub use engine::Engine;

use crate::http::error::{ApiError, Detail};

/// Longest script accepted (characters).
pub const MAX_SCRIPT: usize = 32_768;

/// 400 `invalid_scenario` with the line and column of the problem.
pub fn invalid(e: &ScenarioError) -> ApiError {
    let mut detail = Detail::new("script", e.message.clone());
    detail.line = Some(e.line);
    detail.column = Some(e.column);
    ApiError {
        details: vec![detail],
        ..ApiError::bad_request(
            "invalid_scenario",
            format!("the script is not a valid scenario: {e}"),
        )
    }
}

/// Parses and validates a script as the API receives it, on the scenario engine's threads
/// in the account's turn (never on the request threads): a hostile script costs its own
/// account's share of the engine, within the parser's node, byte and depth bounds.
pub async fn validate(
    state: &crate::state::AppState,
    account: i64,
    script: &str,
) -> Result<Scenario, ApiError> {
    if script.trim().is_empty() || script.chars().count() > MAX_SCRIPT {
        return Err(ApiError::invalid(
            "script",
            format!("must be 1 to {MAX_SCRIPT} characters"),
        ));
    }
    let script = script.to_owned();
    state
        .engine
        .run(account, move || parse_scenario(&script))
        .await
        .map_err(ApiError::internal)?
        .map_err(|e| invalid(&e))
}

/// Parsed scripts by text, so that resuming a run does not parse its script again.
#[derive(Default)]
pub struct ParsedCache {
    scripts: Mutex<HashMap<String, Arc<Scenario>>>,
}

impl std::fmt::Debug for ParsedCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ParsedCache").finish_non_exhaustive()
    }
}

/// Most scripts kept parsed.
const CACHED_SCRIPTS: usize = 512;

impl ParsedCache {
    /// The parsed script (parsing it on first use).
    pub fn get(&self, script: &str) -> anyhow::Result<Arc<Scenario>> {
        if let Ok(map) = self.scripts.lock()
            && let Some(s) = map.get(script)
        {
            return Ok(s.clone());
        }
        let parsed =
            Arc::new(parse_scenario(script).map_err(|e| anyhow::anyhow!("stored script: {e}"))?);
        if let Ok(mut map) = self.scripts.lock() {
            if map.len() >= CACHED_SCRIPTS {
                map.clear();
            }
            map.insert(script.to_owned(), parsed.clone());
        }
        Ok(parsed)
    }
}
