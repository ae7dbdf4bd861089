//! A validated scenario, ready to run.

use std::collections::{BTreeMap, HashMap};

use serde_json::Value;

use crate::catalog::ActionSpec;
use crate::template::Template;

/// Index of an action list inside a scenario (a branch, a `then`, an event handler).
pub(crate) type ListId = u32;

/// A parsed and validated scenario. Build one with [`crate::parse_scenario`].
#[derive(Debug, Clone)]
pub struct Scenario {
    pub(crate) description: Option<String>,
    pub(crate) variables: Vec<(String, Value)>,
    pub(crate) auto_answer: bool,
    pub(crate) language: Option<String>,
    pub(crate) branches: BTreeMap<String, ListId>,
    pub(crate) lists: Vec<Vec<Entry>>,
    /// For each expression and code source, the names it uses that the run provides
    /// (`$variables` and the predefined values).
    pub(crate) script_names: HashMap<String, Vec<String>>,
    pub(crate) fingerprint: String,
}

/// One entry of an action list.
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    pub line: usize,
    pub column: usize,
    pub condition: Option<String>,
    pub action: Option<ActionCall>,
    pub then: Option<ListId>,
    pub goto: Option<String>,
}

/// The action part of an entry.
#[derive(Debug, Clone)]
pub(crate) struct ActionCall {
    pub spec: &'static ActionSpec,
    /// Parameters (for javascript@v1 the code is kept raw in `code`).
    pub params: Template,
    pub code: Option<String>,
    pub result: Option<String>,
    pub events: Vec<(String, ListId)>,
}

impl Scenario {
    /// Whether the scenario has a branch of that name.
    pub fn has_branch(&self, name: &str) -> bool {
        self.branches.contains_key(name)
    }

    /// The `description`, if any.
    pub fn description(&self) -> Option<&str> {
        self.description.as_deref()
    }

    /// `defaults.autoAnswer` (true unless the scenario says false).
    pub fn default_auto_answer(&self) -> bool {
        self.auto_answer
    }

    /// `defaults.language`, if any.
    pub fn default_language(&self) -> Option<&str> {
        self.language.as_deref()
    }

    /// The declared `variables` with their initial values (`$` names).
    pub fn variables(&self) -> serde_json::Map<String, Value> {
        self.variables.iter().cloned().collect()
    }

    /// A fingerprint of the scenario's source; a run state records the one it started with.
    pub fn fingerprint(&self) -> &str {
        &self.fingerprint
    }

    pub(crate) fn entry(&self, list: ListId, index: usize) -> Option<&Entry> {
        self.lists.get(list as usize).and_then(|l| l.get(index))
    }
}

/// FNV-1a 64 of a text, hex: stable across builds and platforms.
pub(crate) fn fingerprint(text: &str) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{hash:016x}")
}
