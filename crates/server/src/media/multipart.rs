//! Strict reading of the multipart bodies of audio uploads: only the named parts, each once,
//! the file part counted while it streams in so an oversized upload is refused before
//! anything is stored or even fully read.

use axum::extract::{FromRequest, Multipart, Request};
use axum::http::header;

use crate::error::{AppError, AppResult};
use crate::state::AppState;

/// Largest text part (the name).
const MAX_TEXT_PART: usize = 4096;
/// Room for part headers and boundaries on top of the size limits.
const OVERHEAD: usize = 64 * 1024;

/// The uploaded file part.
#[derive(Debug)]
pub(crate) struct FilePart {
    /// The part's `Content-Type`, if any.
    pub content_type: Option<String>,
    /// The bytes.
    pub bytes: Vec<u8>,
}

/// The parts of an audio upload.
#[derive(Debug, Default)]
pub(crate) struct Upload {
    /// The `name` part.
    pub name: Option<String>,
    /// The `file` part.
    pub file: Option<FilePart>,
}

/// Whether the request carries a `multipart/form-data` body.
pub(crate) fn is_multipart(req: &Request) -> bool {
    req.headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.trim_start()
                .to_ascii_lowercase()
                .starts_with("multipart/form-data")
        })
}

fn malformed(e: impl std::fmt::Display) -> AppError {
    AppError::invalid("body", format!("malformed multipart body: {e}"))
}

/// Reads a multipart body whose parts must be among `allowed` (`name`, `file`).
///
/// On a refusal (unknown part, file over the limit...) the rest of the body is read and
/// discarded, up to [`drain_cap`], before answering: a server that answers and closes while
/// the client is still sending makes most clients report a broken connection instead of the
/// answer. Bodies announced larger than the cap are refused at once, unread.
pub(crate) async fn read(state: &AppState, req: Request, allowed: &[&str]) -> AppResult<Upload> {
    let cap = drain_cap(state);
    let declared_len = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    if declared_len.is_some_and(|n| n > cap) {
        return Err(super::too_large(state));
    }
    let mut multipart = Multipart::from_request(req, state)
        .await
        .map_err(|e| AppError::invalid("body", format!("not a multipart body: {e}")))?;
    let result = read_parts(state, &mut multipart, allowed).await;
    if result.is_err() {
        drain(&mut multipart, cap).await;
    }
    result
}

/// The most a refused body is read (and discarded) before answering.
fn drain_cap(state: &AppState) -> usize {
    state
        .config
        .audio_max_bytes
        .saturating_mul(2)
        .max(8 * 1024 * 1024)
        .saturating_add(OVERHEAD)
}

/// Reads and discards what is left of the body, up to `cap` bytes.
async fn drain(multipart: &mut Multipart, cap: usize) {
    let mut seen = 0usize;
    while let Ok(Some(mut field)) = multipart.next_field().await {
        while let Ok(Some(chunk)) = field.chunk().await {
            seen = seen.saturating_add(chunk.len());
            if seen > cap {
                return;
            }
        }
    }
}

async fn read_parts(
    state: &AppState,
    multipart: &mut Multipart,
    allowed: &[&str],
) -> AppResult<Upload> {
    let max_file = state.config.audio_max_bytes;
    let mut upload = Upload::default();
    while let Some(mut field) = multipart.next_field().await.map_err(malformed)? {
        let name = field.name().unwrap_or_default().to_owned();
        if !allowed.contains(&name.as_str()) {
            let shown = if name.is_empty() {
                "(unnamed part)"
            } else {
                &name
            };
            return Err(AppError::invalid(shown, "unknown part"));
        }
        let already = match name.as_str() {
            "name" => upload.name.is_some(),
            _ => upload.file.is_some(),
        };
        if already {
            return Err(AppError::invalid(name, "must be given once"));
        }
        let limit = if name == "file" {
            max_file
        } else {
            MAX_TEXT_PART
        };
        let content_type = field.content_type().map(str::to_owned);
        let mut bytes = Vec::new();
        while let Some(chunk) = field.chunk().await.map_err(malformed)? {
            if bytes.len() + chunk.len() > limit {
                return Err(if name == "file" {
                    super::too_large(state)
                } else {
                    AppError::invalid(name, "is too long")
                });
            }
            bytes.extend_from_slice(&chunk);
        }
        if name == "name" {
            let text = String::from_utf8(bytes)
                .map_err(|_| AppError::invalid("name", "must be UTF-8 text"))?;
            upload.name = Some(text);
        } else {
            upload.file = Some(FilePart {
                content_type,
                bytes,
            });
        }
    }
    Ok(upload)
}
