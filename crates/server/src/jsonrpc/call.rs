//! What a JSON-RPC method receives, and how it reads its positional parameters.

use serde_json::Value;

use super::error::{RpcError, codes};
use crate::http::auth::LegacyCaller;
use crate::state::AppState;

/// What a method receives.
pub(crate) struct Call<'a> {
    /// Shared state.
    pub state: &'a AppState,
    /// The authenticated account.
    pub caller: &'a LegacyCaller,
    /// Positional parameters.
    pub params: Vec<Value>,
}

impl Call<'_> {
    /// Parameter `i`, or Null when absent.
    pub(crate) fn param(&self, i: usize) -> &Value {
        self.params.get(i).unwrap_or(&Value::Null)
    }

    /// A required string parameter.
    pub(crate) fn string(&self, i: usize, name: &str) -> Result<String, RpcError> {
        match self.param(i) {
            Value::String(s) => Ok(s.clone()),
            Value::Null => Err(RpcError::new(
                codes::MISSING_PROPERTY,
                format!("param {i} ({name}) is required"),
            )),
            _ => Err(RpcError::invalid_param(
                i,
                format!("{name} must be a string"),
            )),
        }
    }

    /// A required integer parameter, as a number or a string of digits.
    pub(crate) fn int(&self, i: usize, name: &str) -> Result<i64, RpcError> {
        match self.param(i) {
            Value::Null => Err(RpcError::new(
                codes::MISSING_PROPERTY,
                format!("param {i} ({name}) is required"),
            )),
            v => integer(v)
                .ok_or_else(|| RpcError::invalid_param(i, format!("{name} must be an integer"))),
        }
    }
}

/// An integer given as a JSON number or as a string of digits (the real service takes both,
/// and its example scripts pass command-line arguments through as strings).
pub(crate) fn integer(v: &Value) -> Option<i64> {
    match v {
        Value::Number(n) => n.as_i64(),
        Value::String(s) => {
            let digits = s.trim();
            let body = digits.strip_prefix('-').unwrap_or(digits);
            if body.is_empty() || body.len() > 18 || !body.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            digits.parse().ok()
        }
        _ => None,
    }
}

/// The integer `key` of an options object: `default` when absent or null, refused outside
/// `0..=max`.
pub(crate) fn int_option(v: &Value, key: &str, default: i64, max: i64) -> Result<i64, RpcError> {
    match v.get(key) {
        None | Some(Value::Null) => Ok(default),
        Some(n) => integer(n).filter(|n| (0..=max).contains(n)).ok_or_else(|| {
            RpcError::new(
                codes::INVALID_PROPERTY,
                format!("{key} must be an integer from 0 to {max}"),
            )
        }),
    }
}
