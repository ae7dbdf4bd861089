//! Speech: text spoken by an offline engine as 8 kHz audio, for `say` on calls and for
//! audio files made from text, and kept so a repeated prompt costs nothing.
//!
//! Two engines, chosen by voice ([`voices`]): espeak-ng (Debian's `espeak-ng`), small and
//! fast, on every install; and Piper (PyPI `piper-tts` with a voice package), a natural
//! neural voice, where it is installed. Both are GPL-3 and run as processes of their own:
//! their licence does not reach dialtone, and a text that makes one misbehave ends that
//! process only. Syntheses are bounded: the text's length, each engine's time and output,
//! how many run at once, the bytes the cache keeps. When the neural engine fails, the text
//! is spoken by espeak-ng's voice of the same language rather than not at all.

mod cache;
mod error;
mod espeak;
mod piper;
pub(crate) mod transcribe;
pub(crate) mod voices;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use dialtone_sip::Spoken;
use dialtone_sip::media::Pcm;
use tokio::sync::{OnceCell, Semaphore};

use cache::Cache;
pub(crate) use error::SpeechError;
use voices::{Engine, Voice};

/// Longest text spoken (characters); longer ones are cut.
pub(crate) const MAX_TEXT: usize = 4_000;
/// Whether a text may be spoken: at most [`MAX_TEXT`] characters, not only white space.
/// The same rule as the OpenAPI schema of `TtsContent.text` (`maxLength`, pattern `\S`).
pub(crate) fn speakable(text: &str) -> bool {
    text.chars().count() <= MAX_TEXT && text.chars().any(|c| !c.is_whitespace())
}

/// Syntheses at once on a node.
const AT_ONCE: usize = 2;
/// Bytes of audio the cache keeps (about 33 minutes of speech).
const CACHE_BYTES: usize = 32 * 1024 * 1024;

/// Time spent and audio made, in milliseconds (counters for `/metrics`).
#[derive(Debug, Default)]
pub(crate) struct Work {
    took_ms: AtomicU64,
    audio_ms: AtomicU64,
    count: AtomicU64,
}

impl Work {
    /// Counts one piece of work.
    pub(crate) fn add(&self, took: std::time::Duration, audio_ms: u64) {
        let took = u64::try_from(took.as_millis()).unwrap_or(u64::MAX);
        self.took_ms.fetch_add(took, Ordering::Relaxed);
        self.audio_ms.fetch_add(audio_ms, Ordering::Relaxed);
        self.count.fetch_add(1, Ordering::Relaxed);
    }

    /// Milliseconds spent, of audio, and how many times.
    pub(crate) fn read(&self) -> (u64, u64, u64) {
        (
            self.took_ms.load(Ordering::Relaxed),
            self.audio_ms.load(Ordering::Relaxed),
            self.count.load(Ordering::Relaxed),
        )
    }
}

/// The node's speech.
pub(crate) struct Speech {
    cache: Cache,
    slots: Semaphore,
    made: AtomicU64,
    /// Syntheses by espeak-ng.
    pub(crate) by_espeak: Work,
    /// Syntheses by the neural voice.
    pub(crate) by_neural: Work,
    /// Transcriptions.
    pub(crate) transcribed: Work,
    /// The neural voice's process, once looked for (None: not installed).
    neural: OnceCell<Option<piper::Piper>>,
}

impl Default for Speech {
    fn default() -> Self {
        Self {
            cache: Cache::new(CACHE_BYTES),
            slots: Semaphore::new(AT_ONCE),
            made: AtomicU64::new(0),
            by_espeak: Work::default(),
            by_neural: Work::default(),
            transcribed: Work::default(),
            neural: OnceCell::new(),
        }
    }
}

impl Speech {
    /// The neural engine, when its program and voice are installed (looked for once).
    async fn neural(&self) -> Option<&piper::Piper> {
        self.neural
            .get_or_init(|| async {
                let model = piper::model_of(voices::NEURAL.first()?.engine_voice).await?;
                piper::Piper::new(model).ok()
            })
            .await
            .as_ref()
    }

    /// Every voice offered on this node.
    pub(crate) async fn voices(&self) -> Vec<Voice> {
        let neural = self.neural().await.is_some();
        voices::all(neural).collect()
    }

    /// The voice named `name`; an unknown name is refused with the names there are.
    pub(crate) async fn voice(&self, name: &str) -> Result<Voice, SpeechError> {
        let neural = self.neural().await.is_some();
        voices::find(name, neural).ok_or_else(|| {
            let names: Vec<&str> = voices::all(neural).map(|v| v.id).collect();
            SpeechError::UnknownVoice(name.to_owned(), names.join(", "))
        })
    }

    /// The voice `say` uses for `language` (BCP 47; en-US when none is given).
    pub(crate) async fn voice_for(&self, language: Option<&str>) -> Voice {
        let neural = self.neural().await.is_some();
        voices::for_language(language.unwrap_or("en-US"), neural)
    }

    /// `text` spoken in `language`, with the language's voice.
    pub(crate) async fn speak(
        &self,
        text: &str,
        language: Option<&str>,
    ) -> Result<Spoken, SpeechError> {
        let voice = self.voice_for(language).await;
        self.speak_with(text, voice).await
    }

    /// `text` spoken by `voice`, as 8 kHz samples.
    pub(crate) async fn speak_with(&self, text: &str, voice: Voice) -> Result<Spoken, SpeechError> {
        let text: String = text.chars().take(MAX_TEXT).collect();
        let key = (voice.id.to_owned(), text.clone());
        if let Some(pcm) = self.cache.get(&key) {
            return Ok(Spoken { pcm, cached: true });
        }
        let _slot = self
            .slots
            .acquire()
            .await
            .map_err(|_| SpeechError::Failed("closed".into()))?;
        // Another task may have made it while this one waited.
        if let Some(pcm) = self.cache.get(&key) {
            return Ok(Spoken { pcm, cached: true });
        }
        self.made.fetch_add(1, Ordering::Relaxed);
        let started = std::time::Instant::now();
        let (wav, work) = match (voice.engine, self.neural().await) {
            (Engine::Neural, Some(piper)) => match piper.synthesize(&text).await {
                Ok(wav) => (wav, &self.by_neural),
                Err(e) => {
                    tracing::warn!(voice = voice.id, error = %e, "the neural voice failed: espeak-ng speaks instead");
                    let instead = voices::for_language(voice.language, false);
                    let wav = espeak::synthesize(instead.engine_voice, &text).await?;
                    (wav, &self.by_espeak)
                }
            },
            (Engine::Neural, None) | (Engine::Espeak, _) => {
                let espeak_voice = match voice.engine {
                    Engine::Espeak => voice.engine_voice,
                    Engine::Neural => voices::for_language(voice.language, false).engine_voice,
                };
                (
                    espeak::synthesize(espeak_voice, &text).await?,
                    &self.by_espeak,
                )
            }
        };
        let pcm: Pcm = Arc::from(to_8k(wav).await?);
        work.add(started.elapsed(), pcm.len() as u64 / 8);
        self.cache.put(key, pcm.clone());
        Ok(Spoken { pcm, cached: false })
    }

    /// Prompts served from the cache, and syntheses made, so far.
    pub(crate) fn counts(&self) -> (u64, u64) {
        (self.cache.hits(), self.made.load(Ordering::Relaxed))
    }
}

/// An engine's WAV as 8 kHz samples (converted off the async threads).
async fn to_8k(wav: Vec<u8>) -> Result<Vec<i16>, SpeechError> {
    tokio::task::spawn_blocking(move || {
        let limits = dialtone_media::Limits {
            max_bytes: usize::try_from(espeak::MAX_OUTPUT).unwrap_or(usize::MAX),
            max_duration_ms: 11 * 60 * 1000,
        };
        let converted = dialtone_media::convert(&wav, dialtone_media::DeclaredType::Wav, &limits)
            .map_err(|e| SpeechError::Failed(e.to_string()))?;
        dialtone_media::wav_samples(&converted.wav)
            .ok_or_else(|| SpeechError::Failed("no audio".into()))
    })
    .await
    .map_err(|e| SpeechError::Failed(e.to_string()))?
}
