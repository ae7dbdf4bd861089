//! Calls on demand: `POST /sandbox/calls {from, to}` calls one of the account's numbers (or
//! a free platform number, the line that records audio files by phone); the caller then
//! sends digits, audio, or hangs up, and `GET /sandbox/calls/{callid}` shows the timeline.

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use dialtone_domain::E164;
use dialtone_store::calls::{self, Call};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::http::auth::Caller;
use crate::http::error::{ApiError, ApiResult};
use crate::http::extract::{Checks, json_body};
use crate::scenarios::call::{NORMAL_CLEARING, cdr, hang_up_and_drive, place_inbound, poll_runs};
use crate::state::AppState;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PlaceBody {
    from: String,
    to: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct DtmfBody {
    digits: String,
}

/// A sandbox call: its CDR, what happened on it, and the run handling it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SandboxCall {
    /// CDR fields (callid, direction, from, to, status, started, ...).
    #[serde(flatten)]
    pub cdr: Value,
    /// Timeline `{at, kind, data}`, oldest first.
    pub timeline: Vec<Value>,
    /// Digits sent and not yet consumed.
    pub pending_digits: String,
}

async fn render(state: &AppState, call_id: i64) -> ApiResult<SandboxCall> {
    let (call, timeline) = state
        .store
        .read(move |c| {
            let call = calls::by_id(c, call_id)?.ok_or_else(|| ApiError::not_found("call"))?;
            let timeline = calls::timeline(c, call_id)?;
            Ok::<_, ApiError>((call, timeline))
        })
        .await?;
    Ok(SandboxCall {
        cdr: cdr(&call),
        timeline: timeline
            .into_iter()
            .map(|t| {
                serde_json::json!({
                    "at": t.at.to_rfc3339(),
                    "kind": t.kind,
                    "data": serde_json::from_str::<Value>(&t.data).unwrap_or(Value::Null),
                })
            })
            .collect(),
        pending_digits: call.dtmf,
    })
}

async fn find(state: &AppState, account: i64, callid: String) -> ApiResult<Call> {
    state
        .store
        .read(move |c| calls::by_callid(c, &callid))
        .await?
        .filter(|k| k.account_id == account)
        .ok_or_else(|| ApiError::not_found("call"))
}

/// `POST /sandbox/calls`: 201 with the call as it stands once the scenario waits or ends.
pub async fn place(
    State(state): State<AppState>,
    caller: Caller,
    body: Bytes,
) -> ApiResult<(StatusCode, Json<SandboxCall>)> {
    caller.ensure_may_spend()?;
    let b: PlaceBody = json_body(&body)?;
    let mut checks = Checks::default();
    if E164::parse_format(&b.from).is_err() {
        checks.fail("from", "must be an E.164 number");
    }
    let to = checks.phone("to", Some(&b.to));
    checks.finish()?;
    let to = to.map(|t| t.as_str().to_owned()).unwrap_or_default();
    let placed = place_inbound(&state, caller.account.id, &b.from, &to).await?;
    Ok((
        StatusCode::CREATED,
        Json(render(&state, placed.call.id).await?),
    ))
}

/// `GET /sandbox/calls/{callid}`.
pub async fn show(
    State(state): State<AppState>,
    caller: Caller,
    Path(callid): Path<String>,
) -> ApiResult<Json<SandboxCall>> {
    let call = find(&state, caller.account.id, callid).await?;
    Ok(Json(render(&state, call.id).await?))
}

/// `POST /sandbox/calls/{callid}/dtmf {digits}`: the caller presses keys.
pub async fn dtmf(
    State(state): State<AppState>,
    caller: Caller,
    Path(callid): Path<String>,
    body: Bytes,
) -> ApiResult<Json<SandboxCall>> {
    let b: DtmfBody = json_body(&body)?;
    if b.digits.is_empty()
        || b.digits.len() > 64
        || !b
            .digits
            .chars()
            .all(|ch| ch.is_ascii_digit() || ch == '*' || ch == '#')
    {
        return Err(ApiError::invalid("digits", "1 to 64 of 0-9, * and #"));
    }
    let call = find(&state, caller.account.id, callid).await?;
    if call.status == "ended" {
        return Err(ApiError::not_found("live call"));
    }
    let (id, now) = (call.id, state.clock.now());
    let digits = b.digits.clone();
    state
        .store
        .write(move |c| {
            calls::push_dtmf(c, id, &digits)?;
            calls::log(
                c,
                id,
                "dtmf",
                &serde_json::json!({"digits": digits}).to_string(),
                now,
            )
        })
        .await?;
    poll_runs(&state, id).await.map_err(ApiError::internal)?;
    Ok(Json(render(&state, id).await?))
}

/// The audio of a sandbox call: a multipart body's `file` part (as CONTRACT section 8 says),
/// or the raw body, with its content type; over `--audio-max-bytes` is 400 `file_too_large`.
async fn heard(
    state: &AppState,
    req: axum::extract::Request,
) -> ApiResult<(Option<String>, Bytes)> {
    if crate::media::multipart::is_multipart(&req) {
        let upload = crate::media::multipart::read(state, req, &["file"]).await?;
        let file = upload
            .file
            .ok_or_else(|| ApiError::invalid("file", "is required"))?;
        return Ok((file.content_type, Bytes::from(file.bytes)));
    }
    let content_type = req
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let body = axum::body::to_bytes(req.into_body(), state.config.audio_max_bytes)
        .await
        .map_err(|_| ApiError::bad_request("file_too_large", "the audio is over the size limit"))?;
    Ok((content_type, body))
}

/// `POST /sandbox/calls/{callid}/audio`: the caller speaks; the body (multipart `file`, or
/// the raw audio) is audio in any format audio files accept (converted to 8 kHz mono WAV). A recording in progress takes it; on the
/// recording line, the digits sent before are the code.
pub async fn audio(
    State(state): State<AppState>,
    caller: Caller,
    Path(callid): Path<String>,
    req: axum::extract::Request,
) -> ApiResult<Json<SandboxCall>> {
    let call = find(&state, caller.account.id, callid).await?;
    if call.status == "ended" {
        return Err(ApiError::not_found("live call"));
    }
    let (content_type, body) = heard(&state, req).await?;
    if call.number.is_none() && call.direction == "inbound" {
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
        hang_up_and_drive(&state, call.id, NORMAL_CLEARING, "callee")
            .await
            .map_err(ApiError::internal)?;
        return Ok(Json(render(&state, call.id).await?));
    }
    let declared = content_type
        .as_deref()
        .and_then(dialtone_media::DeclaredType::from_content_type)
        .or_else(|| dialtone_media::sniff(&body))
        .ok_or_else(|| {
            ApiError::bad_request("unsupported_format", "the audio format is not supported")
        })?;
    let limits = crate::media::limits(&state);
    let budget = crate::media::budget(&state);
    let converted = crate::media::converter::convert(&budget, body.to_vec(), declared, &limits)
        .await
        .map_err(|e| {
            ApiError::bad_request(
                "unsupported_format",
                format!("the audio cannot be used: {}", e.reason()),
            )
        })?;
    let (id, now) = (call.id, state.clock.now());
    state
        .store
        .write(move |c| {
            calls::set_audio(c, id, &converted.wav)?;
            calls::log(
                c,
                id,
                "audio",
                &serde_json::json!({"duration": converted.duration_ms}).to_string(),
                now,
            )
        })
        .await?;
    poll_runs(&state, id).await.map_err(ApiError::internal)?;
    Ok(Json(render(&state, id).await?))
}

/// `POST /sandbox/calls/{callid}/hangup`: the caller hangs up.
pub async fn hangup(
    State(state): State<AppState>,
    caller: Caller,
    Path(callid): Path<String>,
) -> ApiResult<Json<SandboxCall>> {
    let call = find(&state, caller.account.id, callid).await?;
    if call.status == "ended" {
        return Err(ApiError::not_found("live call"));
    }
    hang_up_and_drive(&state, call.id, NORMAL_CLEARING, "caller")
        .await
        .map_err(ApiError::internal)?;
    Ok(Json(render(&state, call.id).await?))
}
