//! Recordings: `GET /recordings` (every filter of the seed), `GET/PATCH/DELETE
//! /recordings/{sid}`, `GET /recordings/{sid}/file`, and the bulk `PATCH` and `DELETE
//! /recordings` (up to 100 sids, none meaning all of them) done by a task.

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, RawQuery, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use dialtone_domain::call::RecordingKind;
use dialtone_store::recordings::{self, Filter, Recording};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use utoipa::{IntoParams, ToSchema};

use super::common::{SortOrder, by_sid, path_sid, search_page};
use crate::error::{AppError, AppResult};
use crate::http::auth::Caller;
use crate::http::extract::{Checks, OptionalJsonBody, QueryString, json_body, one_or_many, query};
use crate::http::search::{SearchResult, page};
use crate::state::AppState;

/// Most sids a bulk change names.
pub(crate) const MAX_BULK_SIDS: usize = 100;

/// A recording made on a call.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RecordingView {
    /// Identifier.
    #[schema(example = "abcdef12")]
    pub sid: String,
    /// `call` (startRecording@v1) or `voicemail` (record@v1).
    #[serde(rename = "type")]
    #[schema(value_type = String)]
    pub kind: RecordingKind,
    /// Calling number.
    pub caller: String,
    /// Called number.
    pub callee: String,
    /// The call it was made on.
    pub callid: String,
    /// Length in seconds.
    pub duration: i64,
    /// Whether it was marked read.
    pub read: bool,
    /// When it was marked read.
    pub read_at: Option<String>,
    /// Transcript, when one exists.
    pub transcript: Option<String>,
    /// The transcription asked for it (null when none was): its language, `status`
    /// (`pending`, `ready`, `failed`, `unsupported`) and `error`.
    pub transcription: Option<TranscriptionView>,
    /// Creation time.
    pub created: String,
}

/// Where the transcription of a recording stands.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct TranscriptionView {
    /// The language asked for (BCP 47).
    pub language: String,
    /// `pending`, `ready`, `failed` or `unsupported` (no model for the language).
    #[schema(value_type = String)]
    pub status: dialtone_domain::call::TranscriptStatus,
    /// Why it failed or was not made.
    pub error: Option<String>,
}

impl From<Recording> for RecordingView {
    fn from(r: Recording) -> Self {
        Self {
            sid: r.sid.to_string(),
            kind: r.kind,
            caller: r.caller,
            callee: r.callee,
            callid: r.callid,
            duration: r.duration,
            read: r.read_at.is_some(),
            read_at: r.read_at.map(|t| t.to_rfc3339()),
            transcript: r.transcript,
            transcription: match (r.transcript_language, r.transcript_status) {
                (Some(language), Some(status)) => Some(TranscriptionView {
                    language,
                    status,
                    error: r.transcript_error,
                }),
                _ => None,
            },
            created: r.created.to_rfc3339(),
        }
    }
}

/// The only sort key of recordings.
#[allow(
    dead_code,
    reason = "a shape of the OpenAPI document only: the values are read as text and checked by the handler"
)]
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum RecordingSort {
    /// By creation time (default).
    Created,
}

/// Search filters of recordings.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RecordingQuery {
    /// Exactly this recording.
    #[param(pattern = "^[0-9a-z]{8}$")]
    sid: Option<String>,
    /// `call` or `voicemail`.
    #[serde(rename = "type")]
    #[param(rename = "type")]
    kind: Option<String>,
    /// Calling number.
    /// Any E.164 number valid in its country's numbering plan is accepted (400 otherwise);
    /// no pattern can state the plans, so the pattern is the fictional drama range, always
    /// valid and routed by the simulated network.
    #[param(pattern = r"^\+447700900[0-9]{3}$", example = "+447700900123")]
    caller: Option<String>,
    /// Called number.
    /// Any E.164 number valid in its country's numbering plan is accepted (400 otherwise);
    /// no pattern can state the plans, so the pattern is the fictional drama range, always
    /// valid and routed by the simulated network.
    #[param(pattern = r"^\+447700900[0-9]{3}$", example = "+447700900123")]
    callee: Option<String>,
    /// Call id (1 to 64 characters).
    #[param(min_length = 1, max_length = 64)]
    callid: Option<String>,
    /// Read (`true`) or unread (`false`).
    read: Option<String>,
    /// Read at or after (RFC 3339).
    #[param(format = DateTime)]
    read_after: Option<String>,
    /// Read before (RFC 3339).
    #[param(format = DateTime)]
    read_before: Option<String>,
    /// Created at or after (RFC 3339).
    #[param(format = DateTime)]
    created_after: Option<String>,
    /// Created before (RFC 3339).
    #[param(format = DateTime)]
    created_before: Option<String>,
    /// At least this many seconds long.
    #[param(value_type = Option<i64>, minimum = 0, maximum = 9223372036854775807_i64)]
    min_duration: Option<String>,
    /// Sort key (only `created`, the default).
    #[param(value_type = Option<RecordingSort>)]
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

/// Search recordings.
#[utoipa::path(get, path = "/recordings", tag = "Recordings", params(RecordingQuery),
    responses((status = 200, description = "a page of recordings", body = SearchResult<RecordingView>)))]
pub(crate) async fn search(
    State(state): State<AppState>,
    caller: Caller,
    QueryString(q): QueryString<RecordingQuery>,
) -> AppResult<Json<SearchResult<RecordingView>>> {
    let mut checks = Checks::default();
    let filter = Filter {
        sid: checks.sid("sid", q.sid.as_deref()),
        kind: checks.choice(
            "type",
            q.kind.as_deref(),
            &[
                ("call", RecordingKind::Call),
                ("voicemail", RecordingKind::Voicemail),
            ],
        ),
        caller: checks
            .phone("caller", q.caller.as_deref())
            .map(|n| n.as_str().to_owned()),
        callee: checks
            .phone("callee", q.callee.as_deref())
            .map(|n| n.as_str().to_owned()),
        callid: checks
            .text("callid", q.callid.as_deref(), 1, 64)
            .map(str::to_owned),
        read: checks.boolean("read", q.read.as_deref()),
        read_after: checks.datetime("readAfter", q.read_after.as_deref()),
        read_before: checks.datetime("readBefore", q.read_before.as_deref()),
        created_after: checks.datetime("createdAfter", q.created_after.as_deref()),
        created_before: checks.datetime("createdBefore", q.created_before.as_deref()),
        min_duration: checks.int("minDuration", q.min_duration.as_deref(), 0, i64::MAX),
    };
    let page = page(
        &mut checks,
        q.sort.as_deref(),
        &[("created", ())],
        (),
        q.order.as_deref(),
        q.offset.as_deref(),
        q.limit.as_deref(),
    );
    checks.finish()?;
    let account = caller.account.id;
    search_page(
        &state,
        &page,
        |()| "created",
        move |c, paging| recordings::search(c, account, &filter, paging),
    )
    .await
}

/// Get a recording.
#[utoipa::path(get, path = "/recordings/{sid}", tag = "Recordings", params(("sid" = String, Path, description = "recording sid")),
    responses((status = 200, description = "the recording", body = RecordingView)))]
pub(crate) async fn get(
    State(state): State<AppState>,
    caller: Caller,
    Path(sid): Path<String>,
) -> AppResult<Json<RecordingView>> {
    let r = by_sid(
        &state,
        caller.account.id,
        &sid,
        "recording",
        recordings::get,
    )
    .await?;
    Ok(Json(r.into()))
}

/// The changeable part of a recording.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RecordingUpdate {
    /// Read (sets `readAt` to now) or unread (clears it).
    pub read: Option<bool>,
}

/// Mark a recording read or unread.
#[utoipa::path(patch, path = "/recordings/{sid}", tag = "Recordings", params(("sid" = String, Path, description = "recording sid")),
    request_body = RecordingUpdate, responses((status = 200, description = "the recording", body = RecordingView)))]
pub(crate) async fn update(
    State(state): State<AppState>,
    caller: Caller,
    Path(sid): Path<String>,
    OptionalJsonBody(change): OptionalJsonBody<RecordingUpdate>,
) -> AppResult<Json<RecordingView>> {
    let sid = path_sid(&sid, "recording")?;
    let (account, now) = (caller.account.id, state.clock.now());
    let r = state
        .store
        .write(move |c| match change.read {
            Some(read) => recordings::set_read(c, account, &sid, read, now),
            None => recordings::get(c, account, &sid),
        })
        .await?
        .ok_or_else(|| AppError::not_found("recording"))?;
    Ok(Json(r.into()))
}

/// Delete a recording and its audio.
#[utoipa::path(delete, path = "/recordings/{sid}", tag = "Recordings", params(("sid" = String, Path, description = "recording sid")),
    responses((status = 204, description = "deleted")))]
pub(crate) async fn delete(
    State(state): State<AppState>,
    caller: Caller,
    Path(sid): Path<String>,
) -> AppResult<StatusCode> {
    let sid = path_sid(&sid, "recording")?;
    let account = caller.account.id;
    let deleted = state
        .store
        .write(move |c| recordings::delete(c, account, &sid))
        .await?;
    if deleted {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(AppError::not_found("recording"))
    }
}

/// The recording's audio: WAV, 8 kHz, mono, 16-bit PCM.
#[utoipa::path(get, path = "/recordings/{sid}/file", tag = "Recordings", params(("sid" = String, Path, description = "recording sid")),
    responses((status = 200, description = "the audio", content_type = "audio/wav", body = Vec<u8>)))]
pub(crate) async fn file(
    State(state): State<AppState>,
    caller: Caller,
    Path(sid): Path<String>,
) -> AppResult<Response> {
    let wav = by_sid(
        &state,
        caller.account.id,
        &sid,
        "recording",
        recordings::audio,
    )
    .await?;
    Ok(([(header::CONTENT_TYPE, "audio/wav")], wav).into_response())
}

/// The recordings a bulk change targets.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct BulkQuery {
    /// Up to 100 recording sids (repeat the parameter); none targets every recording.
    #[serde(default, alias = "sid[]", deserialize_with = "one_or_many")]
    #[param(value_type = Option<Vec<String>>, min_items = 1, max_items = 100)]
    sid: Option<Vec<String>>,
}

fn bulk_sids(raw: Option<&str>) -> AppResult<Option<Vec<String>>> {
    let q: BulkQuery = query(raw)?;
    let Some(sids) = q.sid else {
        return Ok(None);
    };
    let mut checks = Checks::default();
    if sids.len() > MAX_BULK_SIDS {
        checks.fail(
            "sid",
            format!(
                "at most {MAX_BULK_SIDS} sids, {} given; omit sid to target every recording",
                sids.len()
            ),
        );
    }
    let mut valid = Vec::with_capacity(sids.len());
    for s in &sids {
        if let Some(sid) = checks.sid("sid", Some(s)) {
            valid.push(sid.to_string());
        }
    }
    checks.finish()?;
    valid.sort();
    valid.dedup();
    Ok(Some(valid))
}

async fn start_bulk(
    state: &AppState,
    account: i64,
    kind: &'static str,
    sids: Option<Vec<String>>,
    read: Option<bool>,
) -> AppResult<(StatusCode, Json<Value>)> {
    let (s, a) = (sids.clone(), account);
    let total = state
        .store
        .read(move |c| recordings::count(c, a, s.as_deref()))
        .await?;
    let mut params = json!({ "sids": sids });
    if let Some(read) = read {
        params["read"] = json!(read);
    }
    let task = crate::tasks::start(state, account, kind, params, total).await?;
    Ok((StatusCode::ACCEPTED, Json(json!({"taskid": task.taskid}))))
}

/// The body of a bulk update: the new read mark.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct BulkUpdate {
    /// Read or unread.
    pub read: bool,
}

/// Mark many recordings read or unread (a task).
#[utoipa::path(patch, path = "/recordings", tag = "Recordings", params(BulkQuery), request_body = BulkUpdate,
    responses((status = 202, description = "the task id", body = Object)))]
pub(crate) async fn update_many(
    State(state): State<AppState>,
    caller: Caller,
    RawQuery(raw): RawQuery,
    body: Bytes,
) -> AppResult<(StatusCode, Json<Value>)> {
    let sids = bulk_sids(raw.as_deref())?;
    let change: BulkUpdate = json_body(&body)?;
    start_bulk(
        &state,
        caller.account.id,
        "recordings-update",
        sids,
        Some(change.read),
    )
    .await
}

/// Delete many recordings (a task).
#[utoipa::path(delete, path = "/recordings", tag = "Recordings", params(BulkQuery),
    responses((status = 202, description = "the task id", body = Object)))]
pub(crate) async fn delete_many(
    State(state): State<AppState>,
    caller: Caller,
    RawQuery(raw): RawQuery,
) -> AppResult<(StatusCode, Json<Value>)> {
    let sids = bulk_sids(raw.as_deref())?;
    start_bulk(&state, caller.account.id, "recordings-delete", sids, None).await
}
