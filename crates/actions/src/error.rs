//! The validation error of a scenario, positioned in its YAML source.

use std::fmt;

/// Why a scenario was rejected, with the 1-based line and column of the offending YAML node.
///
/// Displayed as `line L, column C: message`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ScenarioError {
    /// 1-based line of the offending node.
    pub line: usize,
    /// 1-based column of the offending node.
    pub column: usize,
    /// What is wrong, in plain words.
    pub message: String,
}

impl ScenarioError {
    pub(crate) fn new(line: usize, column: usize, message: impl Into<String>) -> Self {
        ScenarioError {
            line: line.max(1),
            column: column.max(1),
            message: message.into(),
        }
    }
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "line {}, column {}: {}",
            self.line, self.column, self.message
        )
    }
}

impl std::error::Error for ScenarioError {}
