//! Why a text could not be spoken.

/// Why a text could not be spoken.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SpeechError {
    /// The engine is not installed.
    #[error("the speech engine {0} is not installed")]
    Missing(&'static str),
    /// The engine failed or took too long.
    #[error("the speech engine failed: {0}")]
    Failed(String),
    /// No transcription model for that language.
    #[error("no transcription model for {0}: recordings are transcribed in English only")]
    NoModel(String),
    /// No voice of that name: the voices there are.
    #[error("unknown voice {0:?}: the voices are {1}")]
    UnknownVoice(String, String),
}
