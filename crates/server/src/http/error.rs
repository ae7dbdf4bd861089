//! The one error type of the HTTP interfaces and its JSON body, written in one place:
//! `{"code":"...","message":"...","details":[{"param":"...","message":"..."}]}`.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use dialtone_store::DbError;
use serde::Serialize;

/// One invalid parameter or property of a validation error.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct Detail {
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
    pub fn new(param: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            param: param.into(),
            message: message.into(),
            line: None,
            column: None,
        }
    }
}

/// The error body of v2.0.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ErrorBody {
    /// Machine-readable code, such as `validation_error`.
    pub code: String,
    /// Human-readable explanation.
    pub message: String,
    /// Which parameters were invalid (validation errors only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub details: Option<Vec<Detail>>,
}

/// An error answer of the API: status, code, message and optional details.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{status} {code}: {message}")]
pub struct ApiError {
    /// HTTP status.
    pub status: StatusCode,
    /// Machine-readable code from the contract's table.
    pub code: &'static str,
    /// Human-readable message (never internals).
    pub message: String,
    /// Invalid parameters, for validation errors.
    pub details: Vec<Detail>,
    /// Seconds to wait, for 429.
    pub retry_after: Option<u64>,
}

impl ApiError {
    /// An error with no details.
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            code,
            message: message.into(),
            details: Vec::new(),
            retry_after: None,
        }
    }

    /// 400 `validation_error` naming each invalid parameter.
    pub fn validation(details: Vec<Detail>) -> Self {
        let names: Vec<&str> = details.iter().map(|d| d.param.as_str()).collect();
        let message = match details.as_slice() {
            [one] => format!("invalid parameter {}: {}", one.param, one.message),
            _ => format!("invalid parameters: {}", names.join(", ")),
        };
        Self {
            details,
            ..Self::new(StatusCode::BAD_REQUEST, "validation_error", message)
        }
    }

    /// 400 `validation_error` for one parameter.
    pub fn invalid(param: impl Into<String>, message: impl Into<String>) -> Self {
        Self::validation(vec![Detail::new(param, message)])
    }

    /// 400 with another code of the contract's table.
    pub fn bad_request(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, code, message)
    }

    /// 401 `auth_error`.
    pub fn auth(message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNAUTHORIZED, "auth_error", message)
    }

    /// 403 with a code of the contract's table.
    pub fn forbidden(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::FORBIDDEN, code, message)
    }

    /// 404 `not_found` for a resource kind.
    pub fn not_found(what: &str) -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            "not_found",
            format!("{what} not found"),
        )
    }

    /// 429 with a code and the seconds to wait.
    pub fn too_many(code: &'static str, message: impl Into<String>, retry_after: u64) -> Self {
        Self {
            retry_after: Some(retry_after),
            ..Self::new(StatusCode::TOO_MANY_REQUESTS, code, message)
        }
    }

    /// 500 `internal_error`: the cause goes to the log, never to the client.
    pub fn internal(cause: impl std::fmt::Display) -> Self {
        tracing::error!(error = %cause, "internal error");
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal_error",
            "internal error; the server log has the details under this request's x-request-id",
        )
    }

    /// The JSON body.
    pub fn body(&self) -> ErrorBody {
        ErrorBody {
            code: self.code.to_owned(),
            message: self.message.clone(),
            details: (!self.details.is_empty()).then(|| self.details.clone()),
        }
    }
}

impl From<DbError> for ApiError {
    fn from(e: DbError) -> Self {
        Self::internal(e)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut response = (self.status, axum::Json(self.body())).into_response();
        if let Some(secs) = self.retry_after
            && let Ok(v) = HeaderValue::from_str(&secs.to_string())
        {
            response.headers_mut().insert(header::RETRY_AFTER, v);
        }
        response
    }
}

/// The result type of handlers.
pub type ApiResult<T> = Result<T, ApiError>;
