//! The error every use case returns, whatever interface called it: a code of the contract's
//! table ([`ErrorCode`]), a message for the client, the invalid parameters, and for internal
//! errors the cause (for the log, never for the client). Each interface maps the code in
//! one exhaustive match: `http::error` to HTTP statuses, `jsonrpc::error` to JSON-RPC codes.

use std::sync::Arc;

/// The codes of the contract's error table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum ErrorCode {
    /// Invalid parameters or properties (`details` names each).
    ValidationError,
    /// The body is not JSON, or not an object.
    InvalidJson,
    /// A scenario script that does not parse or validate.
    InvalidScenario,
    /// Audio in a format that is not supported or cannot be decoded.
    UnsupportedFormat,
    /// Audio over the size limit.
    FileTooLarge,
    /// A number already reserved.
    ReservationExists,
    /// A reservation that ran out.
    ReservationExpired,
    /// A number that cannot be bought.
    NumberNotAvailable,
    /// A malformed `<BRAND>-Login-As` header.
    LoginAsInvalid,
    /// A task that has ended.
    TaskNotCancellable,
    /// An export over more days than allowed.
    ExportRangeTooLong,
    /// An end user still referenced by numbers.
    EndUserInUse,
    /// An idempotency key used with another request.
    IdempotencyMismatch,
    /// An idempotent request carried out whose answer was lost.
    IdempotencyAnswerLost,
    /// Missing or wrong credentials.
    AuthError,
    /// The account is suspended.
    AccountSuspended,
    /// Not enough prepaid credit.
    InsufficientCredit,
    /// An alphanumeric sender not approved.
    SenderNotApproved,
    /// The account holds its limit of a resource.
    QuotaExceeded,
    /// A `<BRAND>-Login-As` target the caller may not act as.
    LoginAsRefused,
    /// Not allowed for this account.
    Forbidden,
    /// No such resource (or not the caller's).
    NotFound,
    /// The path does not take this method.
    MethodNotAllowed,
    /// Too many requests: retry after the time given.
    RateLimited,
    /// Too many exports running or asked for.
    ExportQuotaExceeded,
    /// Something failed inside the platform (the log has the cause).
    InternalError,
}

impl ErrorCode {
    /// The code's word in error bodies.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::ValidationError => "validation_error",
            Self::InvalidJson => "invalid_json",
            Self::InvalidScenario => "invalid_scenario",
            Self::UnsupportedFormat => "unsupported_format",
            Self::FileTooLarge => "file_too_large",
            Self::ReservationExists => "reservation_exists",
            Self::ReservationExpired => "reservation_expired",
            Self::NumberNotAvailable => "number_not_available",
            Self::LoginAsInvalid => "login_as_invalid",
            Self::TaskNotCancellable => "task_not_cancellable",
            Self::ExportRangeTooLong => "export_range_too_long",
            Self::EndUserInUse => "end_user_in_use",
            Self::IdempotencyMismatch => "idempotency_mismatch",
            Self::IdempotencyAnswerLost => "idempotency_answer_lost",
            Self::AuthError => "auth_error",
            Self::AccountSuspended => "account_suspended",
            Self::InsufficientCredit => "insufficient_credit",
            Self::SenderNotApproved => "sender_not_approved",
            Self::QuotaExceeded => "quota_exceeded",
            Self::LoginAsRefused => "login_as_refused",
            Self::Forbidden => "forbidden",
            Self::NotFound => "not_found",
            Self::MethodNotAllowed => "method_not_allowed",
            Self::RateLimited => "rate_limited",
            Self::ExportQuotaExceeded => "export_quota_exceeded",
            Self::InternalError => "internal_error",
        }
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One invalid parameter or property of a validation error.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, utoipa::ToSchema)]
pub(crate) struct Detail {
    /// The parameter or property (a dotted path for nested properties).
    pub param: String,
    /// What is wrong with it.
    pub message: String,
    /// Line of the problem in a scenario script (1-based), for `invalid_scenario`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
    /// Column of the problem in a scenario script (1-based), for `invalid_scenario`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub column: Option<usize>,
}

impl Detail {
    /// A detail for `param`.
    pub(crate) fn new(param: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            param: param.into(),
            message: message.into(),
            line: None,
            column: None,
        }
    }
}

/// What went wrong in a use case.
#[derive(Debug, Clone)]
pub struct AppError {
    /// The code of the contract's table.
    pub(crate) code: ErrorCode,
    /// What the client is told (never internals).
    pub(crate) message: String,
    /// Invalid parameters, for validation errors.
    pub(crate) details: Vec<Detail>,
    /// Seconds to wait, for [`ErrorCode::RateLimited`] and the like.
    pub(crate) retry_after: Option<u64>,
    /// What failed, for internal errors: logged, never shown to clients.
    pub(crate) cause: Option<Arc<anyhow::Error>>,
}

impl std::fmt::Display for AppError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.cause {
            Some(cause) => write!(f, "{}: {cause:#}", self.code),
            None => write!(f, "{}: {}", self.code, self.message),
        }
    }
}

impl std::error::Error for AppError {}

impl AppError {
    /// The code's word, as error bodies carry it.
    pub fn code(&self) -> &'static str {
        self.code.as_str()
    }

    /// An error with no details.
    pub(crate) fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            details: Vec::new(),
            retry_after: None,
            cause: None,
        }
    }

    /// `validation_error` naming each invalid parameter.
    pub(crate) fn validation(details: Vec<Detail>) -> Self {
        let names: Vec<&str> = details.iter().map(|d| d.param.as_str()).collect();
        let message = match details.as_slice() {
            [one] => format!("invalid parameter {}: {}", one.param, one.message),
            _ => format!("invalid parameters: {}", names.join(", ")),
        };
        Self {
            details,
            ..Self::new(ErrorCode::ValidationError, message)
        }
    }

    /// `validation_error` for one parameter.
    pub(crate) fn invalid(param: impl Into<String>, message: impl Into<String>) -> Self {
        Self::validation(vec![Detail::new(param, message)])
    }

    /// `auth_error`.
    pub(crate) fn auth(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::AuthError, message)
    }

    /// `not_found` for a resource kind.
    pub(crate) fn not_found(what: &str) -> Self {
        Self::new(ErrorCode::NotFound, format!("{what} not found"))
    }

    /// An error to retry after `retry_after` seconds.
    pub(crate) fn too_many(code: ErrorCode, message: impl Into<String>, retry_after: u64) -> Self {
        Self {
            retry_after: Some(retry_after),
            ..Self::new(code, message)
        }
    }

    /// Logs the cause of an internal error with its chain (where the error is answered, so
    /// the line carries the request's or the worker's context).
    pub(crate) fn log_cause(&self) {
        if let Some(cause) = &self.cause {
            tracing::error!(error = %format!("{cause:#}"), "internal error");
        }
    }

    /// `internal_error`: the cause (with its chain) goes to the log where the error is
    /// reported, never to the client.
    pub(crate) fn internal(cause: impl std::fmt::Display) -> Self {
        Self {
            cause: Some(Arc::new(anyhow::anyhow!("{cause:#}"))),
            ..Self::new(
                ErrorCode::InternalError,
                "internal error; the server log has the details under this request's x-request-id",
            )
        }
    }
}

impl From<dialtone_store::DbError> for AppError {
    fn from(e: dialtone_store::DbError) -> Self {
        Self::internal(e)
    }
}

/// The result of a use case.
pub(crate) type AppResult<T> = Result<T, AppError>;
