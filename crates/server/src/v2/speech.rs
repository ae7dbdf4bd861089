//! Text to speech in v2.0 (the contract names no such route; see docs/decisions.md):
//! `PUT /audio-files/{sid}/tts {text, voice}` makes a file's content a text spoken by a voice
//! (202, `pending-conversion`, then `ready` with source `tts`), and `GET /tts/voices` lists
//! the voices with their language and gender.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::audio_files::AudioFileView;
use super::common::path_sid;
use crate::error::{AppError, AppResult};
use crate::http::auth::Caller;
use crate::http::extract::{Checks, JsonBody, QueryString};
use crate::speech::voices::Voice;
use crate::state::AppState;

/// Text for an audio file.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct TtsContent {
    /// The text to speak (1 to 4,000 characters, not only spaces).
    #[schema(min_length = 1, max_length = 4000, pattern = "\\S")]
    text: String,
    /// The voice (`GET /tts/voices`); default: the voice of en-US.
    voice: Option<String>,
}

/// A voice.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct VoiceView {
    /// Its name, for `voice` (`TTS_EN-GB_SERENA`).
    id: String,
    /// Its language (BCP 47).
    language: String,
    /// `female` or `male`.
    gender: String,
    /// `neural` (natural) or `espeak` (small and fast).
    engine: String,
}

impl From<Voice> for VoiceView {
    fn from(v: Voice) -> Self {
        Self {
            id: v.id.to_owned(),
            language: v.language.to_owned(),
            gender: v.gender.as_str().to_owned(),
            engine: v.engine.as_str().to_owned(),
        }
    }
}

/// The voices.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct VoiceList {
    /// Every voice of this server.
    voices: Vec<VoiceView>,
}

/// No query parameters.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct NoParams {}

/// Make the content a text spoken by a voice (202, `pending-conversion`, then `ready`).
#[utoipa::path(put, path = "/audio-files/{sid}/tts", tag = "Audio files",
    params(("sid" = String, Path, description = "audio file sid")),
    request_body = TtsContent,
    responses((status = 202, description = "the text is being spoken", body = AudioFileView)))]
pub(crate) async fn set_tts(
    State(state): State<AppState>,
    caller: Caller,
    Path(sid): Path<String>,
    QueryString(_params): QueryString<NoParams>,
    JsonBody(body): JsonBody<TtsContent>,
) -> AppResult<(StatusCode, Json<AudioFileView>)> {
    let sid = path_sid(&sid, "audio file")?;
    let mut checks = Checks::default();
    if !crate::speech::speakable(&body.text) {
        checks.fail("text", "1 to 4000 characters, not only spaces");
    }
    checks.finish()?;
    let voice = match &body.voice {
        Some(name) => state
            .speech
            .voice(name)
            .await
            .map_err(|e| AppError::invalid("voice", e.to_string()))?,
        None => state.speech.voice_for(None).await,
    };
    let file = crate::media::set_tts(&state, caller.account.id, sid, body.text, voice.id)
        .await?
        .ok_or_else(|| AppError::not_found("audio file"))?;
    Ok((StatusCode::ACCEPTED, Json(file.into())))
}

/// The voices text can be spoken with, with their language and gender.
#[utoipa::path(get, path = "/tts/voices", tag = "Audio files",
    responses((status = 200, description = "the voices", body = VoiceList)))]
pub(crate) async fn voices(
    State(state): State<AppState>,
    _caller: Caller,
    QueryString(_params): QueryString<NoParams>,
) -> Json<VoiceList> {
    Json(VoiceList {
        voices: state
            .speech
            .voices()
            .await
            .into_iter()
            .map(VoiceView::from)
            .collect(),
    })
}
