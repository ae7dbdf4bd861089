//! Text problems as the interfaces report them.

use dialtone_domain::sms::TextError;

use crate::error::AppError;

/// Maps a text problem to the v2.0 error naming `body` (or `encoding`).
pub(crate) fn text_error(e: &TextError) -> AppError {
    match e {
        TextError::NotGsm(_) => AppError::invalid("encoding", e.to_string()),
        _ => AppError::invalid("body", e.to_string()),
    }
}
