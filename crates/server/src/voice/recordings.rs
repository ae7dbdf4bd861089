//! Recordings calls make: stored with their audio (and, when asked, a transcription queued
//! for the workers), announced with `media.recording.new` (the earlier Media.Recording
//! shape) and written on the call's timeline.

use dialtone_domain::Timestamp;
use dialtone_domain::call::{RecordingKind, TranscriptStatus};
use dialtone_store::calls::{self, Call, NewRecording, Transcription};
use dialtone_store::recordings::Recording;
use dialtone_store::{Conn, DbError};
use serde_json::{Value, json};

use super::legs::{emit, timeline};

/// What was recorded, from `started` to `end` (ms since the epoch).
#[derive(Debug, Clone)]
pub(crate) struct Recorded {
    /// What it holds.
    pub kind: RecordingKind,
    /// Start of the recording.
    pub started: i64,
    /// End of the recording.
    pub end: i64,
    /// The audio the caller sent (8 kHz WAV); None records silence of that length.
    pub audio: Option<Vec<u8>>,
    /// The transcription asked for: its language, and the run and fiber whose `ready`
    /// event waits for it.
    pub transcription: Option<(String, Option<(i64, u32)>)>,
}

/// Stores a recording of `call` for its account; emits `media.recording.new`; returns the
/// v2.0 recording object.
pub(crate) fn store(
    c: &mut dyn Conn,
    call: &Call,
    recorded: Recorded,
    now: Timestamp,
) -> Result<Value, DbError> {
    let Recorded {
        kind,
        started,
        end,
        audio,
        transcription,
    } = recorded;
    let (wav, duration_ms) = match audio {
        Some(wav) => {
            let ms = dialtone_media::wav_info(&wav).map_or(0, |(_, _, ms)| ms);
            (wav, ms)
        }
        None => {
            let ms = u64::try_from((end - started).max(0)).unwrap_or(0);
            (dialtone_media::silence_wav(ms), ms)
        }
    };
    let duration = i64::try_from(duration_ms.div_ceil(1000)).unwrap_or(0);
    let unsupported = transcription.as_ref().and_then(|(language, _)| {
        crate::speech::transcribe::model_language(language)
            .err()
            .map(|e| e.to_string())
    });
    let asked = transcription
        .as_ref()
        .map(|(language, waiter)| Transcription {
            language,
            status: if unsupported.is_some() {
                TranscriptStatus::Unsupported
            } else {
                TranscriptStatus::Pending
            },
            error: unsupported.as_deref(),
            waiter: *waiter,
        });
    let sid = calls::create_recording(
        c,
        &NewRecording {
            account_id: call.account_id,
            kind,
            caller: &call.caller,
            callee: &call.callee,
            callid: &call.callid,
            duration,
            audio: &wav,
            transcription: asked,
        },
        now,
    )?;
    let object = json!({
        "sid": sid.as_str(),
        "type": kind,
        "caller": call.caller,
        "callee": call.callee,
        "callid": call.callid,
        "duration": duration,
        "read": false,
        "readAt": null,
        "transcript": null,
        "transcription": asked.map(|t| transcription_view(t.language, t.status, t.error)),
        "created": now.to_rfc3339(),
    });
    let legacy = json!({
        "hash": sid.to_hash(),
        "type": kind.legacy(),
        "callid": call.callid,
        "caller": call.caller,
        "callee": call.callee,
        "duration": duration,
        "status": "READY",
    });
    emit(c, call.account_id, "media.recording.new", &legacy, now)?;
    timeline(
        c,
        call.id,
        "recorded",
        &json!({"recording": sid.as_str(), "type": kind, "duration": duration}),
        now,
    )?;
    Ok(object)
}

/// The `transcription` of a recording object: its language, where it stands, why not.
pub(crate) fn transcription_view(
    language: &str,
    status: TranscriptStatus,
    error: Option<&str>,
) -> Value {
    json!({"language": language, "status": status, "error": error})
}

/// The v2.0 recording object of a stored recording (its transcript as it now stands).
pub(crate) fn view(r: &Recording) -> Value {
    json!({
        "sid": r.sid.as_str(),
        "type": r.kind,
        "caller": r.caller,
        "callee": r.callee,
        "callid": r.callid,
        "duration": r.duration,
        "read": r.read_at.is_some(),
        "readAt": r.read_at.map(|t| t.to_rfc3339()),
        "transcript": r.transcript,
        "transcription": match (&r.transcript_language, r.transcript_status) {
            (Some(language), Some(status)) => {
                transcription_view(language, status, r.transcript_error.as_deref())
            }
            _ => Value::Null,
        },
        "created": r.created.to_rfc3339(),
    })
}

/// The earlier interfaces' Media.Recording of a stored recording, with its transcript.
pub(crate) fn legacy_view(r: &Recording) -> Value {
    json!({
        "hash": r.sid.to_hash(),
        "type": r.kind.legacy(),
        "callid": r.callid,
        "caller": r.caller,
        "callee": r.callee,
        "duration": r.duration,
        "status": "READY",
        "transcript": r.transcript,
        "transcription_status": r.transcript_status,
    })
}
