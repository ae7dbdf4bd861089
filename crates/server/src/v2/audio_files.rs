//! Audio files: `GET/POST /audio-files`, `GET/PATCH/DELETE /audio-files/{sid}`,
//! `GET/PUT /audio-files/{sid}/file`, `PUT /audio-files/{sid}/phone-id`.
//!
//! These routes read their bodies themselves (the general body limit is lifted for them):
//! multipart uploads are counted while they stream in and refused with 400 `file_too_large`
//! past the configured size, before anything is stored.

use axum::Json;
use axum::extract::{DefaultBodyLimit, Path, RawQuery, Request, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use dialtone_domain::Sid;
use dialtone_media::DeclaredType;
use dialtone_store::audio_files::{self, AudioFile, Filter, SOURCE_UPLOAD, SOURCES, STATUSES};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::common::{NameCreatedUpdated, SortOrder, by_sid, path_sid, search_page};
use crate::error::{AppError, AppResult, ErrorCode};
use crate::http::auth::Caller;
use crate::http::extract::{Checks, QueryString, json_body, query};
use crate::http::search::{SearchResult, page};
use crate::media::multipart::{self, FilePart};
use crate::media::{self, emit_status, phone_recording};
use crate::state::AppState;

/// The audio file routes, with the general body limit lifted (they enforce their own).
pub(crate) fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(search, create))
        .routes(routes!(get, update, delete))
        .routes(routes!(file, upload))
        .routes(routes!(phone_id))
        .layer(DefaultBodyLimit::disable())
}

/// An audio file.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct AudioFileView {
    /// Identifier.
    #[schema(example = "abcdef12")]
    pub sid: String,
    /// Name.
    pub name: String,
    /// `pending-content`, `pending-conversion`, `processing`, `ready` or `error`.
    pub status: String,
    /// Where the content came from: `upload`, `phone` or `tts` (null before any content).
    pub source: Option<String>,
    /// The voice of a text-to-speech file (`PUT /audio-files/{sid}/tts`).
    pub voice: Option<String>,
    /// The text of a text-to-speech file.
    pub text: Option<String>,
    /// Content type of the upload (null before any content).
    pub content_type: Option<String>,
    /// Duration of the converted audio in milliseconds (once ready).
    pub duration: Option<i64>,
    /// Size of the upload in bytes (null before any content).
    pub size: Option<i64>,
    /// Why the conversion failed (when `error`): starts with `not audio`, `undecodable`,
    /// `too long` or `too large`.
    pub error: Option<String>,
    /// Creation time.
    pub created: String,
    /// Last change.
    pub updated: String,
}

impl From<AudioFile> for AudioFileView {
    fn from(f: AudioFile) -> Self {
        Self {
            sid: f.sid.to_string(),
            name: f.name,
            status: f.status,
            source: f.source,
            voice: f.voice,
            text: f.text,
            content_type: f.content_type,
            duration: f.duration_ms,
            size: f.size,
            error: f.error,
            created: f.created.to_rfc3339(),
            updated: f.updated.to_rfc3339(),
        }
    }
}

/// JSON create body (no content) and PATCH body.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct AudioFileName {
    /// Name, 1 to 64 characters.
    #[schema(min_length = 1, max_length = 64)]
    pub name: String,
}

/// Multipart create body.
#[derive(Debug, ToSchema)]
#[allow(dead_code)]
pub(crate) struct AudioFileUpload {
    /// Name, 1 to 64 characters.
    #[schema(min_length = 1, max_length = 64)]
    name: String,
    /// The audio (audio/flac, audio/mpeg, audio/mp4, audio/ogg or audio/wav).
    #[schema(value_type = Option<String>, format = Binary, min_length = 1)]
    file: Option<Vec<u8>>,
}

/// Multipart content body.
#[derive(Debug, ToSchema)]
#[allow(dead_code)]
pub(crate) struct AudioFileContent {
    /// The audio (audio/flac, audio/mpeg, audio/mp4, audio/ogg or audio/wav).
    #[schema(value_type = String, format = Binary, min_length = 1)]
    file: Vec<u8>,
}

/// Where and what to dial to record the file by phone.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PhoneIdView {
    /// The number to call (E.164).
    #[schema(example = "+447700900999")]
    pub phone_number: String,
    /// Six digits to enter as DTMF once connected.
    #[schema(example = "042917")]
    pub code: String,
    /// When the code stops working (10 minutes).
    pub expires: String,
}

/// Search filters of audio files.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct AudioFileQuery {
    /// Part of the name (1 to 64 characters).
    #[param(min_length = 1, max_length = 64)]
    name: Option<String>,
    /// Status.
    status: Option<String>,
    /// Source: `upload` or `phone`.
    source: Option<String>,
    /// Sort key (default `updated`).
    #[param(value_type = Option<NameCreatedUpdated>)]
    sort: Option<String>,
    /// Sort direction (default `desc`).
    #[param(value_type = Option<SortOrder>)]
    order: Option<String>,
    /// Hits to skip.
    #[param(value_type = Option<i64>, minimum = 0, maximum = 1000000000)]
    offset: Option<String>,
    /// Hits per page, 1 to 100 (default 10).
    #[param(value_type = Option<i64>, minimum = 1, maximum = 100)]
    limit: Option<String>,
}

/// Query of `PUT /audio-files/{sid}/phone-id`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct PhoneIdQuery {
    /// Country (ISO 3166 alpha-2) of the number to call; the closest country with a number
    /// is used when it has none.
    #[param(required = true, pattern = "^ *[A-Za-z]{2} *$", example = "GB")]
    country: Option<String>,
}

/// Endpoints without query parameters still refuse unknown ones by name.
#[derive(Debug, Deserialize)]
pub(crate) struct NoParams {}

#[derive(Clone, Copy)]
enum Sort {
    Name,
    Created,
    Updated,
}

fn valid_name(checks: &mut Checks, name: Option<&str>) -> Option<String> {
    let name = checks.required("name", name)?;
    checks.text("name", Some(name), 1, 64).map(str::to_owned)
}

/// The declared type of an uploaded file part: its `Content-Type` when it names a supported
/// type; when it has none (or `application/octet-stream`), what the content looks like.
fn declared_type(part: &FilePart) -> AppResult<DeclaredType> {
    match part.content_type.as_deref().map(str::trim) {
        None | Some("") | Some("application/octet-stream") => {
            dialtone_media::sniff(&part.bytes).ok_or_else(|| media::unsupported("unknown"))
        }
        Some(declared) => {
            DeclaredType::from_content_type(declared).ok_or_else(|| media::unsupported(declared))
        }
    }
}

fn checked_file(part: FilePart) -> AppResult<(DeclaredType, Vec<u8>)> {
    if part.bytes.is_empty() {
        return Err(AppError::invalid("file", "must not be empty"));
    }
    Ok((declared_type(&part)?, part.bytes))
}

/// Search audio files.
#[utoipa::path(get, path = "/audio-files", tag = "Audio files", params(AudioFileQuery),
    responses((status = 200, description = "a page of audio files", body = SearchResult<AudioFileView>)))]
pub(crate) async fn search(
    State(state): State<AppState>,
    caller: Caller,
    QueryString(q): QueryString<AudioFileQuery>,
) -> AppResult<Json<SearchResult<AudioFileView>>> {
    let mut checks = Checks::default();
    let name = checks
        .text("name", q.name.as_deref(), 1, 64)
        .map(str::to_owned);
    let statuses: Vec<(&str, &str)> = STATUSES.iter().map(|s| (*s, *s)).collect();
    let status = checks
        .choice("status", q.status.as_deref(), &statuses)
        .map(str::to_owned);
    let sources: Vec<(&str, &str)> = SOURCES.iter().map(|s| (*s, *s)).collect();
    let source = checks
        .choice("source", q.source.as_deref(), &sources)
        .map(str::to_owned);
    let page = page(
        &mut checks,
        q.sort.as_deref(),
        &[
            ("name", Sort::Name),
            ("created", Sort::Created),
            ("updated", Sort::Updated),
        ],
        Sort::Updated,
        q.order.as_deref(),
        q.offset.as_deref(),
        q.limit.as_deref(),
    );
    checks.finish()?;
    let filter = Filter {
        name,
        status,
        source,
    };
    let column = |s| match s {
        Sort::Name => "name",
        Sort::Created => "created",
        Sort::Updated => "updated",
    };
    let account = caller.account.id;
    search_page(&state, &page, column, move |c, paging| {
        audio_files::search(c, account, &filter, paging)
    })
    .await
}

/// Create an audio file: JSON `{name}` (201, `pending-content`), or multipart with `name`
/// and an optional `file` (202 `pending-conversion` with a file, 201 `pending-content`
/// without).
#[utoipa::path(post, path = "/audio-files", tag = "Audio files",
    request_body(content(
        (AudioFileName = "application/json"),
        (AudioFileUpload = "multipart/form-data"),
    )),
    responses(
        (status = 201, description = "created without content", body = AudioFileView),
        (status = 202, description = "created; the content is being converted", body = AudioFileView),
    ))]
pub(crate) async fn create(
    State(state): State<AppState>,
    caller: Caller,
    QueryString(_params): QueryString<NoParams>,
    req: Request,
) -> AppResult<(StatusCode, Json<AudioFileView>)> {
    let (name, content) = if multipart::is_multipart(&req) {
        let upload = multipart::read(&state, req, &["name", "file"]).await?;
        let mut checks = Checks::default();
        let name = valid_name(&mut checks, upload.name.as_deref());
        checks.finish()?;
        let content = upload.file.map(checked_file).transpose()?;
        (name.unwrap_or_default(), content)
    } else {
        let max = state.config.max_body_bytes;
        let bytes = axum::body::to_bytes(req.into_body(), max)
            .await
            .map_err(|_| AppError::invalid("body", "the request body is too large"))?;
        let body: AudioFileName = json_body(&bytes)?;
        let mut checks = Checks::default();
        let name = valid_name(&mut checks, Some(&body.name));
        checks.finish()?;
        (name.unwrap_or_default(), None)
    };
    let (account, now) = (caller.account.id, state.clock.now());
    let has_content = content.is_some();
    let config = state.config.clone();
    let file = state
        .store
        .write(move |c| {
            crate::quotas::check(c, &config, crate::quotas::Quota::AudioFiles, account)?;
            let mut file = audio_files::create(c, account, &name, now)?;
            emit_status(c, &config.public_url(), &file, now)?;
            if let Some((declared, bytes)) = content {
                crate::quotas::check_audio_bytes(c, &config, account, bytes.len(), 0)?;
                file = audio_files::set_content(
                    c,
                    file.id,
                    SOURCE_UPLOAD,
                    declared.content_type(),
                    &bytes,
                    now,
                )?;
                emit_status(c, &config.public_url(), &file, now)?;
            }
            Ok::<_, AppError>(file)
        })
        .await?;
    if has_content {
        state.wake.notify_one();
        Ok((StatusCode::ACCEPTED, Json(file.into())))
    } else {
        Ok((StatusCode::CREATED, Json(file.into())))
    }
}

/// Get an audio file.
#[utoipa::path(get, path = "/audio-files/{sid}", tag = "Audio files", params(("sid" = String, Path, description = "audio file sid")),
    responses((status = 200, description = "the audio file", body = AudioFileView)))]
pub(crate) async fn get(
    State(state): State<AppState>,
    caller: Caller,
    Path(sid): Path<String>,
) -> AppResult<Json<AudioFileView>> {
    let file = by_sid(
        &state,
        caller.account.id,
        &sid,
        "audio file",
        audio_files::get,
    )
    .await?;
    Ok(Json(file.into()))
}

/// Rename an audio file (only the name is updatable).
#[utoipa::path(patch, path = "/audio-files/{sid}", tag = "Audio files", params(("sid" = String, Path, description = "audio file sid")),
    request_body = AudioFileName, responses((status = 200, description = "the audio file", body = AudioFileView)))]
pub(crate) async fn update(
    State(state): State<AppState>,
    caller: Caller,
    Path(sid): Path<String>,
    QueryString(_params): QueryString<NoParams>,
    req: Request,
) -> AppResult<Json<AudioFileView>> {
    let sid = path_sid(&sid, "audio file")?;
    let bytes = axum::body::to_bytes(req.into_body(), state.config.max_body_bytes)
        .await
        .map_err(|_| AppError::invalid("body", "the request body is too large"))?;
    let body: AudioFileName = json_body(&bytes)?;
    let mut checks = Checks::default();
    let name = valid_name(&mut checks, Some(&body.name)).unwrap_or_default();
    checks.finish()?;
    let (account, now) = (caller.account.id, state.clock.now());
    let file = state
        .store
        .write(move |c| audio_files::rename(c, account, &sid, &name, now))
        .await?
        .ok_or_else(|| AppError::not_found("audio file"))?;
    Ok(Json(file.into()))
}

/// Delete an audio file with its content.
#[utoipa::path(delete, path = "/audio-files/{sid}", tag = "Audio files", params(("sid" = String, Path, description = "audio file sid")),
    responses((status = 204, description = "deleted")))]
pub(crate) async fn delete(
    State(state): State<AppState>,
    caller: Caller,
    Path(sid): Path<String>,
) -> AppResult<StatusCode> {
    let sid = path_sid(&sid, "audio file")?;
    let account = caller.account.id;
    if state
        .store
        .write(move |c| audio_files::delete(c, account, &sid))
        .await?
    {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(AppError::not_found("audio file"))
    }
}

/// The converted audio: WAV, 8 kHz, mono, 16-bit PCM (404 until the file is `ready`).
#[utoipa::path(get, path = "/audio-files/{sid}/file", tag = "Audio files", params(("sid" = String, Path, description = "audio file sid")),
    responses((status = 200, description = "the converted audio", content_type = "audio/wav", body = Vec<u8>)))]
pub(crate) async fn file(
    State(state): State<AppState>,
    caller: Caller,
    Path(sid): Path<String>,
) -> AppResult<Response> {
    let sid = path_sid(&sid, "audio file")?;
    let account = caller.account.id;
    let wav = state
        .store
        .read(move |c| audio_files::converted(c, account, &sid))
        .await?
        .ok_or_else(|| AppError::not_found("audio file"))?
        .ok_or_else(|| {
            AppError::new(
                ErrorCode::NotFound,
                "the audio file has no converted audio: it is not ready",
            )
        })?;
    Ok(([(header::CONTENT_TYPE, "audio/wav")], wav).into_response())
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Signed {
    expires: String,
    signature: String,
}

/// `GET /v2.0/downloads/audio-files/{sid}?expires=&signature=`: the converted audio of a
/// file by the signed link its earlier object (`url`) gives, without credentials; 404 when
/// the signature is wrong, the link has expired or the file is not ready.
#[utoipa::path(get, path = "/downloads/audio-files/{sid}", tag = "Audio files",
    params(
        ("sid" = String, Path, description = "audio file sid"),
        ("expires" = i64, Query, description = "expiry of the link (ms since the epoch), as the link gives it"),
        ("signature" = String, Query, description = "signature of the link, as the link gives it"),
    ),
    security(()),
    responses(
        (status = 200, description = "the converted audio", content_type = "audio/wav", body = Vec<u8>),
        (status = 404, description = "wrong signature, expired link, or no such ready file"),
    ))]
pub(crate) async fn download(
    State(state): State<AppState>,
    Path(sid): Path<String>,
    RawQuery(raw): RawQuery,
) -> Response {
    let not_found = || AppError::not_found("download").into_response();
    let (Some(sid), Ok(signed)) = (
        dialtone_domain::Sid::parse(&sid),
        query::<Signed>(raw.as_deref()),
    ) else {
        return not_found();
    };
    let (Ok(expires), Ok(secret)) = (
        signed.expires.parse::<i64>(),
        crate::tasks::export::secret(&state).await,
    ) else {
        return not_found();
    };
    if !crate::media::verify_audio_url(&secret, &sid, expires, &signed.signature)
        || state.clock.now().millis() >= expires
    {
        return not_found();
    }
    let wav = state
        .store
        .read(move |c| {
            let Some(account) = audio_files::owner(c, &sid)? else {
                return Ok(None);
            };
            Ok::<_, dialtone_store::DbError>(audio_files::converted(c, account, &sid)?.flatten())
        })
        .await;
    match wav {
        Ok(Some(wav)) => ([(header::CONTENT_TYPE, "audio/wav")], wav).into_response(),
        _ => not_found(),
    }
}

/// Replace the content: multipart with `file` (202, `pending-conversion`).
#[utoipa::path(put, path = "/audio-files/{sid}/file", tag = "Audio files", params(("sid" = String, Path, description = "audio file sid")),
    request_body(content = AudioFileContent, content_type = "multipart/form-data"),
    responses((status = 202, description = "the content is being converted", body = AudioFileView)))]
pub(crate) async fn upload(
    State(state): State<AppState>,
    caller: Caller,
    Path(sid): Path<String>,
    QueryString(_params): QueryString<NoParams>,
    req: Request,
) -> AppResult<(StatusCode, Json<AudioFileView>)> {
    let sid = path_sid(&sid, "audio file")?;
    if !multipart::is_multipart(&req) {
        return Err(AppError::invalid(
            "body",
            "must be multipart/form-data with a file part",
        ));
    }
    let account = caller.account.id;
    // 404 before reading a large body for a file that does not exist.
    let lookup = sid.clone();
    if state
        .store
        .read(move |c| audio_files::get(c, account, &lookup))
        .await?
        .is_none()
    {
        return Err(AppError::not_found("audio file"));
    }
    let upload = multipart::read(&state, req, &["file"]).await?;
    let part = upload
        .file
        .ok_or_else(|| AppError::invalid("file", "is required"))?;
    let (declared, bytes) = checked_file(part)?;
    let file = media::replace_content(
        &state,
        account,
        sid,
        SOURCE_UPLOAD,
        declared.content_type(),
        bytes,
    )
    .await?
    .ok_or_else(|| AppError::not_found("audio file"))?;
    Ok((StatusCode::ACCEPTED, Json(file.into())))
}

/// Get a number and code to record the content by phone (10 minutes).
#[utoipa::path(put, path = "/audio-files/{sid}/phone-id", tag = "Audio files",
    params(("sid" = String, Path, description = "audio file sid"), PhoneIdQuery),
    responses((status = 201, description = "what to dial and enter", body = PhoneIdView)))]
pub(crate) async fn phone_id(
    State(state): State<AppState>,
    caller: Caller,
    Path(sid): Path<String>,
    RawQuery(raw): RawQuery,
) -> AppResult<(StatusCode, Json<PhoneIdView>)> {
    let sid: Sid = path_sid(&sid, "audio file")?;
    let q: PhoneIdQuery = query(raw.as_deref())?;
    let mut checks = Checks::default();
    let country = checks
        .required("country", q.country.as_deref())
        .map(|c| c.trim().to_ascii_uppercase());
    if let Some(c) = &country
        && !dialtone_domain::country::is_code(c)
    {
        checks.fail(
            "country",
            "must be an ISO 3166 alpha-2 country code, such as GB",
        );
    }
    checks.finish()?;
    let id = phone_recording::issue(&state, caller.account.id, sid, country.unwrap_or_default())
        .await?
        .ok_or_else(|| AppError::not_found("audio file"))?;
    Ok((
        StatusCode::CREATED,
        Json(PhoneIdView {
            phone_number: id.number.as_str().to_owned(),
            code: id.code,
            expires: id.expires.to_rfc3339(),
        }),
    ))
}
