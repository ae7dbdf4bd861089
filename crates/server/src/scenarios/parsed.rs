//! Parsed scripts by text, so that resuming a run does not parse its script again.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use dialtone_actions::{Scenario, parse_scenario};

/// Parsed scripts by text.
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
