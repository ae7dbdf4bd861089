//! Errors as HTTP answers, written in one place: the status of each code (one exhaustive
//! match) and the JSON body
//! `{"code":"...","message":"...","details":[{"param":"...","message":"..."}]}`.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use crate::error::{AppError, Detail, ErrorCode};

/// The error body of v2.0.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(crate) struct ErrorBody {
    /// Machine-readable code, such as `validation_error`.
    pub code: String,
    /// Human-readable explanation.
    pub message: String,
    /// Which parameters were invalid (validation errors only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub details: Option<Vec<Detail>>,
}

/// The HTTP status of each code.
pub(crate) fn status(code: ErrorCode) -> StatusCode {
    match code {
        ErrorCode::ValidationError
        | ErrorCode::InvalidJson
        | ErrorCode::InvalidScenario
        | ErrorCode::UnsupportedFormat
        | ErrorCode::FileTooLarge
        | ErrorCode::ReservationExists
        | ErrorCode::ReservationExpired
        | ErrorCode::NumberNotAvailable
        | ErrorCode::LoginAsInvalid
        | ErrorCode::TaskNotCancellable
        | ErrorCode::ExportRangeTooLong
        | ErrorCode::EndUserInUse
        | ErrorCode::IdempotencyMismatch
        | ErrorCode::IdempotencyAnswerLost => StatusCode::BAD_REQUEST,
        ErrorCode::AuthError => StatusCode::UNAUTHORIZED,
        ErrorCode::AccountSuspended
        | ErrorCode::InsufficientCredit
        | ErrorCode::SenderNotApproved
        | ErrorCode::QuotaExceeded
        | ErrorCode::LoginAsRefused
        | ErrorCode::Forbidden => StatusCode::FORBIDDEN,
        ErrorCode::NotFound => StatusCode::NOT_FOUND,
        ErrorCode::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
        ErrorCode::RateLimited | ErrorCode::ExportQuotaExceeded => StatusCode::TOO_MANY_REQUESTS,
        ErrorCode::InternalError => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

/// The JSON body of an error.
pub(crate) fn body(e: &AppError) -> ErrorBody {
    ErrorBody {
        code: e.code.as_str().to_owned(),
        message: e.message.clone(),
        details: (!e.details.is_empty()).then(|| e.details.clone()),
    }
}

impl IntoResponse for AppError {
    fn into_response(self) -> Response {
        // Inside the request's span: the log line carries its x-request-id.
        self.log_cause();
        let mut response = (status(self.code), axum::Json(body(&self))).into_response();
        if let Some(secs) = self.retry_after
            && let Ok(v) = HeaderValue::from_str(&secs.to_string())
        {
            response.headers_mut().insert(header::RETRY_AFTER, v);
        }
        response
    }
}
