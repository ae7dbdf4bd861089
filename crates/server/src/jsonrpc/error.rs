//! JSON-RPC errors: the earlier numeric codes, and the platform's errors mapped onto them.

use serde_json::{Value, json};

use crate::error::{AppError, ErrorCode};

/// JSON-RPC error codes used by dialtone.
pub(crate) mod codes {
    /// The body is not JSON.
    pub(crate) const PARSE_ERROR: i64 = -32700;
    /// Not a JSON-RPC 2.0 request object.
    pub(crate) const INVALID_REQUEST: i64 = -32600;
    /// No such method.
    pub(crate) const METHOD_NOT_FOUND: i64 = -32601;
    /// Wrong number or kind of parameters.
    pub(crate) const INVALID_PARAMS: i64 = -32602;
    /// Server fault.
    pub(crate) const INTERNAL: i64 = -32603;
    /// Authentication failed.
    pub(crate) const AUTH: i64 = 22;
    /// Feature not allowed (suspended account, missing approval, no credit).
    pub(crate) const NOT_ALLOWED: i64 = 100;
    /// Object not found.
    pub(crate) const NOT_FOUND: i64 = 115;
    /// A required property is missing.
    pub(crate) const MISSING_PROPERTY: i64 = 150;
    /// A property has an invalid value.
    pub(crate) const INVALID_PROPERTY: i64 = 151;
    /// The SMS could not be routed.
    pub(crate) const SMS_ROUTING: i64 = 1000;
}

/// A JSON-RPC error object.
#[derive(Debug, Clone)]
pub(crate) struct RpcError {
    /// Numeric code.
    pub code: i64,
    /// Text.
    pub message: String,
    /// Extra data (null when none).
    pub data: Value,
}

impl RpcError {
    /// An error with no data.
    pub(crate) fn new(code: i64, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            data: Value::Null,
        }
    }

    /// Invalid parameter at `index` (0-based) of the positional list.
    pub(crate) fn invalid_param(index: usize, message: impl Into<String>) -> Self {
        Self::new(
            codes::INVALID_PROPERTY,
            format!("param {index}: {}", message.into()),
        )
    }
}

impl From<AppError> for RpcError {
    fn from(e: AppError) -> Self {
        let code = match e.code {
            ErrorCode::AuthError => codes::AUTH,
            ErrorCode::NotFound => codes::NOT_FOUND,
            ErrorCode::ValidationError if e.details.iter().all(|d| d.message == "is required") => {
                codes::MISSING_PROPERTY
            }
            ErrorCode::ValidationError
            | ErrorCode::InvalidJson
            | ErrorCode::InvalidScenario
            | ErrorCode::ReservationExists
            | ErrorCode::ReservationExpired
            | ErrorCode::ExportRangeTooLong
            | ErrorCode::TaskNotCancellable
            | ErrorCode::EndUserInUse
            | ErrorCode::UnsupportedFormat
            | ErrorCode::FileTooLarge
            | ErrorCode::NumberNotAvailable
            | ErrorCode::LoginAsInvalid
            | ErrorCode::IdempotencyMismatch => codes::INVALID_PROPERTY,
            ErrorCode::AccountSuspended
            | ErrorCode::Forbidden
            | ErrorCode::SenderNotApproved
            | ErrorCode::InsufficientCredit
            | ErrorCode::RateLimited
            | ErrorCode::ExportQuotaExceeded
            | ErrorCode::QuotaExceeded
            | ErrorCode::LoginAsRefused
            | ErrorCode::MethodNotAllowed => codes::NOT_ALLOWED,
            ErrorCode::IdempotencyAnswerLost | ErrorCode::InternalError => codes::INTERNAL,
        };
        e.log_cause();
        let data = if e.details.is_empty() {
            json!({ "code": e.code.as_str() })
        } else {
            json!({ "code": e.code.as_str(), "details": e.details })
        };
        Self {
            code,
            message: e.message,
            data,
        }
    }
}

impl From<dialtone_store::DbError> for RpcError {
    fn from(e: dialtone_store::DbError) -> Self {
        AppError::from(e).into()
    }
}
