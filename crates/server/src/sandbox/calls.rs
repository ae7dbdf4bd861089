//! Calls on demand: `POST /sandbox/calls {from, to}` calls one of the account's numbers (or
//! a free platform number, the line that records audio files by phone); the caller then
//! sends digits, audio, or hangs up, and `GET /sandbox/calls/{callid}` shows the timeline.

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use dialtone_carrier::voice::CallEvent;
use dialtone_domain::E164;
use dialtone_domain::call::{CallDirection, HangupSource, NORMAL_CLEARING};
use dialtone_store::calls::{self, Call};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{AppError, AppResult, ErrorCode};
use crate::http::auth::Caller;
use crate::http::extract::{Checks, JsonBody, json_body};
use crate::scenarios::call_events::{self, hang_up_and_drive};
use crate::scenarios::inbound_call::{self, Inbound};
use crate::state::AppState;
use crate::voice::cdr::cdr;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct PlaceBody {
    from: String,
    to: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct DtmfBody {
    digits: String,
}

/// A sandbox call: its CDR, what happened on it, and the run handling it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SandboxCall {
    /// CDR fields (callid, direction, from, to, status, started, ...).
    #[serde(flatten)]
    pub cdr: Value,
    /// Timeline `{at, kind, data}`, oldest first.
    pub timeline: Vec<Value>,
    /// Digits sent and not yet consumed.
    pub pending_digits: String,
}

pub(crate) async fn render(state: &AppState, call_id: i64) -> AppResult<SandboxCall> {
    let (call, timeline) = state
        .store
        .read(move |c| {
            let call = calls::by_id(c, call_id)?.ok_or_else(|| AppError::not_found("call"))?;
            let timeline = calls::timeline(c, call_id)?;
            Ok::<_, AppError>((call, timeline))
        })
        .await?;
    let callid = call.callid.clone();
    Ok(SandboxCall {
        cdr: cdr(&call),
        timeline: timeline
            .into_iter()
            .enumerate()
            .map(|(i, t)| {
                let mut entry = serde_json::json!({
                    "at": t.at.to_rfc3339(),
                    "kind": t.kind,
                    "data": serde_json::from_str::<Value>(&t.data).unwrap_or(Value::Null),
                });
                // What a `say` would have sounded like: spoken on demand (and cached).
                if t.kind == "say" {
                    entry["audio"] =
                        Value::String(format!("/sandbox/calls/{callid}/timeline/{i}/audio"));
                }
                entry
            })
            .collect(),
        pending_digits: call.dtmf,
    })
}

async fn find(state: &AppState, account: i64, callid: String) -> AppResult<Call> {
    state
        .store
        .read(move |c| calls::by_callid(c, account, &callid))
        .await?
        .ok_or_else(|| AppError::not_found("call"))
}

/// `POST /sandbox/calls`: 201 with the call as it stands once the scenario waits or ends.
pub(super) async fn place(
    State(state): State<AppState>,
    caller: Caller,
    body: Bytes,
) -> AppResult<(StatusCode, Json<SandboxCall>)> {
    caller.ensure_may_spend()?;
    let b: PlaceBody = json_body(&body)?;
    let mut checks = Checks::default();
    if E164::parse_format(&b.from).is_err() {
        checks.fail("from", "must be an E.164 number");
    }
    let to = checks.phone("to", Some(&b.to));
    checks.finish()?;
    let to = to.map(|t| t.as_str().to_owned()).unwrap_or_default();
    let inbound = Inbound {
        caller_account: caller.account.id,
        from: b.from.clone(),
        to,
        network: crate::networks::SIMULATED.to_owned(),
    };
    let placed = inbound_call::place(&state, inbound).await?;
    Ok((
        StatusCode::CREATED,
        Json(render(&state, placed.call.id).await?),
    ))
}

/// `GET /sandbox/calls/{callid}`.
pub(super) async fn show(
    State(state): State<AppState>,
    caller: Caller,
    Path(callid): Path<String>,
) -> AppResult<Json<SandboxCall>> {
    let call = find(&state, caller.account.id, callid).await?;
    Ok(Json(render(&state, call.id).await?))
}

/// `POST /sandbox/calls/{callid}/dtmf {digits}`: the caller presses keys.
pub(super) async fn dtmf(
    State(state): State<AppState>,
    caller: Caller,
    Path(callid): Path<String>,
    JsonBody(b): JsonBody<DtmfBody>,
) -> AppResult<Json<SandboxCall>> {
    if b.digits.is_empty()
        || b.digits.len() > 64
        || !b
            .digits
            .chars()
            .all(|ch| ch.is_ascii_digit() || ch == '*' || ch == '#')
    {
        return Err(AppError::invalid("digits", "1 to 64 of 0-9, * and #"));
    }
    let call = find(&state, caller.account.id, callid).await?;
    if !call.status.is_live() {
        return Err(AppError::not_found("live call"));
    }
    call_events::report(&state, &call, CallEvent::Digits(b.digits))
        .await
        .map_err(AppError::internal)?;
    Ok(Json(render(&state, call.id).await?))
}

/// The audio of a sandbox call: a multipart body's `file` part (as CONTRACT section 8 says),
/// or the raw body, with its content type; over `--audio-max-bytes` is 400 `file_too_large`.
async fn heard(
    state: &AppState,
    req: axum::extract::Request,
) -> AppResult<(Option<String>, Bytes)> {
    if crate::media::multipart::is_multipart(&req) {
        let upload = crate::media::multipart::read(state, req, &["file"]).await?;
        let file = upload
            .file
            .ok_or_else(|| AppError::invalid("file", "is required"))?;
        return Ok((file.content_type, Bytes::from(file.bytes)));
    }
    let content_type = req
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let body = axum::body::to_bytes(req.into_body(), state.config.audio_max_bytes)
        .await
        .map_err(|_| AppError::new(ErrorCode::FileTooLarge, "the audio is over the size limit"))?;
    Ok((content_type, body))
}

/// `POST /sandbox/calls/{callid}/audio`: the caller speaks; the body (multipart `file`, or
/// the raw audio) is audio in any format audio files accept (converted to 8 kHz mono WAV). A recording in progress takes it; on the
/// recording line, the digits sent before are the code.
pub(super) async fn audio(
    State(state): State<AppState>,
    caller: Caller,
    Path(callid): Path<String>,
    req: axum::extract::Request,
) -> AppResult<Json<SandboxCall>> {
    let call = find(&state, caller.account.id, callid).await?;
    if !call.status.is_live() {
        return Err(AppError::not_found("live call"));
    }
    let (content_type, body) = heard(&state, req).await?;
    if call.number.is_none() && call.direction == CallDirection::Inbound {
        // The recording line: the code first, then the audio.
        use crate::media::phone_recording::{self, Accepted};
        let code: String = call
            .dtmf
            .chars()
            .filter(char::is_ascii_digit)
            .take(phone_recording::CODE_DIGITS)
            .collect();
        let number = E164::from_stored(call.callee.clone());
        // A sandbox call is the account's own: it records only for that account's files.
        let accepted = phone_recording::accept(
            &state,
            &number,
            &call.caller,
            Some(call.account_id),
            &code,
            body.to_vec(),
        )
        .await?;
        let (id, now) = (call.id, state.clock.now());
        let note = match &accepted {
            Accepted::Recorded(sid) => serde_json::json!({"audioFile": sid.as_str()}),
            Accepted::WrongCode => serde_json::json!({"error": "unknown or expired code"}),
            Accepted::LockedOut { until } => serde_json::json!({
                "error": "too many wrong codes: locked out",
                "until": until.to_rfc3339(),
            }),
        };
        state
            .store
            .write(move |c| {
                calls::set_dtmf(c, id, "")?;
                calls::log(c, id, "recorded", &note.to_string(), now)
            })
            .await?;
        hang_up_and_drive(&state, call.id, NORMAL_CLEARING, HangupSource::Callee)
            .await
            .map_err(AppError::internal)?;
        return Ok(Json(render(&state, call.id).await?));
    }
    let declared = content_type
        .as_deref()
        .and_then(dialtone_media::DeclaredType::from_content_type)
        .or_else(|| dialtone_media::sniff(&body))
        .ok_or_else(|| {
            AppError::new(
                ErrorCode::UnsupportedFormat,
                "the audio format is not supported",
            )
        })?;
    let limits = crate::media::limits(&state);
    let budget = crate::media::budget(&state);
    let converted = crate::media::converter::convert(&budget, body.to_vec(), declared, &limits)
        .await
        .map_err(|e| {
            AppError::new(
                ErrorCode::UnsupportedFormat,
                format!("the audio cannot be used: {}", e.reason()),
            )
        })?;
    call_events::report(&state, &call, CallEvent::Audio(converted.wav))
        .await
        .map_err(AppError::internal)?;
    Ok(Json(render(&state, call.id).await?))
}

/// `POST /sandbox/calls/{callid}/hangup`: the caller hangs up.
pub(super) async fn hangup(
    State(state): State<AppState>,
    caller: Caller,
    Path(callid): Path<String>,
) -> AppResult<Json<SandboxCall>> {
    let call = find(&state, caller.account.id, callid).await?;
    if !call.status.is_live() {
        return Err(AppError::not_found("live call"));
    }
    let hangup = CallEvent::Hangup {
        cause: NORMAL_CLEARING,
        source: HangupSource::Caller,
    };
    call_events::report(&state, &call, hangup)
        .await
        .map_err(AppError::internal)?;
    Ok(Json(render(&state, call.id).await?))
}

/// `GET /sandbox/calls/{callid}/timeline/{index}/audio`: the audio of a `say` on the call's
/// timeline (8 kHz WAV), spoken by the voice of its language.
pub(super) async fn said(
    State(state): State<AppState>,
    caller: Caller,
    Path((callid, index)): Path<(String, usize)>,
) -> AppResult<axum::response::Response> {
    use axum::response::IntoResponse;
    let call = find(&state, caller.account.id, callid).await?;
    let id = call.id;
    let entry = state
        .store
        .read(move |c| calls::timeline(c, id))
        .await?
        .into_iter()
        .nth(index)
        .filter(|t| t.kind == "say")
        .ok_or_else(|| AppError::not_found("spoken text"))?;
    let data: Value = serde_json::from_str(&entry.data).unwrap_or(Value::Null);
    let text = data["what"].as_str().unwrap_or_default();
    let pcm = state
        .speech
        .speak(text, data["language"].as_str())
        .await
        .map_err(AppError::internal)?
        .pcm;
    Ok((
        [(axum::http::header::CONTENT_TYPE, "audio/wav")],
        dialtone_media::pcm_wav(&pcm),
    )
        .into_response())
}
