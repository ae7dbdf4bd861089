//! `system.*` methods.

use serde_json::Value;

use super::{Call, RpcError};

/// `system.get_timestamp []`: the server time in Unix seconds.
pub fn get_timestamp(call: &Call<'_>) -> Result<Value, RpcError> {
    Ok(Value::from(call.state.clock.now().unix_seconds()))
}
