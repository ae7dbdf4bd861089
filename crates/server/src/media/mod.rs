//! Audio files (the media library) on the server side: taking in content, the shapes shown
//! by the interfaces and events, the conversion worker and recording by phone.
//!
//! Content and converted audio live in the database (see `docs/decisions.md`), so any node
//! of a PostgreSQL deployment serves them and any node's worker converts them.

pub(crate) mod conversion;
pub(crate) mod converter;
pub(crate) mod geo;
pub(crate) mod multipart;
pub mod phone_recording;

use dialtone_domain::Timestamp;
use dialtone_media::{DeclaredType, Limits};
use dialtone_store::audio_files::{self, AudioFile};
use dialtone_store::{Conn, DbError, events};
use serde_json::{Value, json};

use crate::error::{AppError, ErrorCode};
use crate::state::AppState;

/// The event every status move emits.
pub(crate) const STATUS_EVENT: &str = "media.library.status_update";

/// The conversion limits of this server.
pub fn limits(state: &AppState) -> Limits {
    Limits {
        max_bytes: state.config.audio_max_bytes,
        max_duration_ms: state.config.audio_max_duration_ms,
    }
}

/// Where and within which budget this server converts audio.
pub fn budget(state: &AppState) -> converter::Budget {
    converter::Budget {
        binary: state
            .config
            .audio_converter
            .clone()
            .or_else(|| std::env::current_exe().ok())
            .unwrap_or_else(|| "dialtone".into()),
        memory_mb: state.config.audio_memory_mb,
        cpu_secs: state.config.audio_cpu_secs,
    }
}

/// 400 `file_too_large` for content over the configured size.
pub(crate) fn too_large(state: &AppState) -> AppError {
    AppError::new(
        ErrorCode::FileTooLarge,
        format!(
            "the file is larger than {} bytes",
            state.config.audio_max_bytes
        ),
    )
}

/// 400 `unsupported_format` naming the accepted types.
pub(crate) fn unsupported(declared: &str) -> AppError {
    let accepted: Vec<&str> = DeclaredType::ALL.iter().map(|t| t.content_type()).collect();
    AppError::new(
        ErrorCode::UnsupportedFormat,
        format!(
            "unsupported content type {declared:?}: use one of {}",
            accepted.join(", ")
        ),
    )
}

/// The earlier status word: `pending-conversion` -> `PENDING_CONVERSION`.
pub(crate) fn legacy_status(status: &str) -> String {
    status.replace('-', "_").to_ascii_uppercase()
}

/// How long the `url` of a Media.Library object works.
pub(crate) const URL_TTL_MS: i64 = 24 * 3600 * 1000;

fn url_subject(sid: &dialtone_domain::Sid) -> String {
    format!("audio-files/{}", sid.as_str())
}

/// A link to the converted audio of `sid` that works without credentials for
/// [`URL_TTL_MS`] (signed with the key of export downloads).
pub(crate) fn audio_url(
    public_url: &str,
    secret: &str,
    sid: &dialtone_domain::Sid,
    now: Timestamp,
) -> String {
    let expires = now.millis() + URL_TTL_MS;
    let signature = crate::tasks::export::sign(secret, &url_subject(sid), expires);
    format!(
        "{public_url}/v2.0/downloads/audio-files/{}?expires={expires}&signature={signature}",
        sid.as_str()
    )
}

/// Whether `signature` signs the link of `sid` until `expires` (constant time).
pub(crate) fn verify_audio_url(
    secret: &str,
    sid: &dialtone_domain::Sid,
    expires: i64,
    signature: &str,
) -> bool {
    crate::tasks::export::verify(secret, &url_subject(sid), expires, signature)
}

/// What the earlier object needs beside the file: where the server is seen, the signing
/// key and the time, for the `url` of a ready file.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Links<'a> {
    /// The server's public URL.
    pub public_url: &'a str,
    /// The key signing download links.
    pub secret: &'a str,
    /// Now.
    pub now: Timestamp,
}

/// The Media.Library object of the earlier interfaces and of events: `id`, `hash`, `name`,
/// `status`, `duration` (whole seconds, 0 until ready), `content` (the text of a
/// text-to-speech media: empty for uploads and recordings), `voice` (its voice, empty for
/// others), `source` (`UPLOAD`, `PHONE` or `TTS`, empty before content), `language` and
/// `category` (empty lists), `tags` (an empty object), `url` (a signed link to the
/// converted audio once ready, else null) and `is_editable` (true: every file is the
/// account's own).
pub(crate) fn legacy(file: &AudioFile, links: Links<'_>) -> Value {
    let url = (file.status == audio_files::READY)
        .then(|| audio_url(links.public_url, links.secret, &file.sid, links.now));
    json!({
        "id": file.id,
        "hash": file.sid.to_hash(),
        "name": file.name,
        "status": legacy_status(&file.status),
        "duration": file.duration_ms.map_or(0, |ms| (ms + 500) / 1000),
        "content": file.text.clone().unwrap_or_default(),
        "voice": file.voice.clone().unwrap_or_default(),
        "source": file.source.as_deref().map(str::to_ascii_uppercase).unwrap_or_default(),
        "language": [],
        "category": [],
        "tags": {},
        "url": url,
        "is_editable": true,
    })
}

/// Records `media.library.status_update` for the file's current status, in the caller's
/// transaction.
pub fn emit_status(
    conn: &mut dyn Conn,
    public_url: &str,
    file: &AudioFile,
    now: Timestamp,
) -> Result<(), DbError> {
    let secret = crate::tasks::export::secret_in(conn)?;
    let links = Links {
        public_url,
        secret: &secret,
        now,
    };
    events::emit(
        conn,
        file.account_id,
        STATUS_EVENT,
        &legacy(file, links).to_string(),
        now,
    )
    .map(|_| ())
}

/// Makes a file's content a text spoken by `voice` (source `tts`): queued like an upload,
/// spoken by the conversion worker; None when the account has no such file.
pub(crate) async fn set_tts(
    state: &AppState,
    account_id: i64,
    sid: dialtone_domain::Sid,
    text: String,
    voice: &'static str,
) -> Result<Option<AudioFile>, AppError> {
    let now = state.clock.now();
    let config = state.config.clone();
    let file = state
        .store
        .write(move |c| {
            let Some(file) = audio_files::get(c, account_id, &sid)? else {
                return Ok(None);
            };
            let replacing = crate::quotas::content_size(c, file.id)?;
            crate::quotas::check_audio_bytes(c, &config, account_id, text.len(), replacing)?;
            let file = audio_files::set_tts(c, file.id, &text, voice, now)?;
            emit_status(c, &config.public_url(), &file, now)?;
            Ok::<_, AppError>(Some(file))
        })
        .await?;
    if file.is_some() {
        state.wake.notify_one();
    }
    Ok(file)
}

/// Stores new content for a file of the account (any status) and queues its conversion,
/// emitting the move to `pending-conversion`. None when the account has no such file.
pub(crate) async fn replace_content(
    state: &AppState,
    account_id: i64,
    sid: dialtone_domain::Sid,
    source: &'static str,
    content_type: &'static str,
    bytes: Vec<u8>,
) -> Result<Option<AudioFile>, AppError> {
    let now = state.clock.now();
    let config = state.config.clone();
    let file = state
        .store
        .write(move |c| {
            let Some(file) = audio_files::get(c, account_id, &sid)? else {
                return Ok(None);
            };
            let replacing = crate::quotas::content_size(c, file.id)?;
            crate::quotas::check_audio_bytes(c, &config, account_id, bytes.len(), replacing)?;
            let file = audio_files::set_content(c, file.id, source, content_type, &bytes, now)?;
            emit_status(c, &config.public_url(), &file, now)?;
            Ok::<_, AppError>(Some(file))
        })
        .await?;
    if file.is_some() {
        state.wake.notify_one();
    }
    Ok(file)
}
