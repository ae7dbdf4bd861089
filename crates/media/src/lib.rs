//! Audio conversion of dialtone: turns an uploaded audio file into telephony audio.
//!
//! Everything an audio file of the API goes through before it can be played on a call:
//!
//! 1. [`sniff`] reads the magic bytes and the declared content type must agree with them
//!    (a PNG sent as `audio/wav` is refused as "not audio", never decoded);
//! 2. the container is demultiplexed and decoded with symphonia (FLAC, MP3, AAC in MP4, Vorbis
//!    in Ogg, PCM in WAV), or with a pure-Rust Opus decoder for Opus in Ogg;
//! 3. every channel is averaged into one (downmix to mono);
//! 4. the signal is resampled to 8 kHz with rubato's FFT resampler, whose low-pass filter
//!    removes everything above the new Nyquist frequency (anti-aliasing);
//! 5. the samples are written as a 16-bit PCM mono 8 kHz WAV file.
//!
//! The crate is pure: no I/O, no threads, no async. Callers run [`convert`] where CPU work
//! belongs (the server does it in `spawn_blocking` from a leased background job).

mod decode;
mod mp4edit;
mod resample;
mod sniff;
mod wav;

pub use sniff::sniff;
pub use wav::{pcm_wav, silence_wav, wav_info, wav_samples};

/// The sample rate of converted audio, in hertz.
pub const TARGET_RATE: u32 = 8_000;

/// The audio formats an upload may declare (the seed's supported upload formats).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DeclaredType {
    /// `audio/flac`: FLAC in its native container.
    Flac,
    /// `audio/mpeg`: MPEG-1/2 Layer III (MP3).
    Mpeg,
    /// `audio/mp4`: AAC in an ISO base media (MP4/M4A) container.
    Mp4,
    /// `audio/ogg`: Vorbis or Opus in an Ogg container.
    Ogg,
    /// `audio/wav`: PCM in a RIFF/WAVE container.
    Wav,
}

impl DeclaredType {
    /// Every declared type, in the order of the seed's list.
    pub const ALL: [DeclaredType; 5] = [
        DeclaredType::Flac,
        DeclaredType::Mpeg,
        DeclaredType::Mp4,
        DeclaredType::Ogg,
        DeclaredType::Wav,
    ];

    /// The type for a `Content-Type` value, ignoring case and parameters (`; codecs=opus`).
    ///
    /// Accepts the seed's five names and the common aliases browsers and tools send
    /// (`audio/x-wav`, `audio/wave`, `audio/x-flac`, `audio/mp3`, `audio/x-m4a`, `audio/opus`,
    /// `application/ogg`...). Anything else is `None`.
    pub fn from_content_type(value: &str) -> Option<DeclaredType> {
        let essence = value
            .split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase();
        Some(match essence.as_str() {
            "audio/flac" | "audio/x-flac" => DeclaredType::Flac,
            "audio/mpeg" | "audio/mp3" | "audio/x-mp3" | "audio/mpeg3" | "audio/x-mpeg" => {
                DeclaredType::Mpeg
            }
            "audio/mp4" | "audio/x-m4a" | "audio/m4a" | "audio/aac" | "audio/x-aac" => {
                DeclaredType::Mp4
            }
            "audio/ogg" | "audio/opus" | "audio/vorbis" | "application/ogg" | "audio/x-ogg" => {
                DeclaredType::Ogg
            }
            "audio/wav" | "audio/x-wav" | "audio/wave" | "audio/vnd.wave" => DeclaredType::Wav,
            _ => return None,
        })
    }

    /// The canonical content type of the seed for this type (e.g. `audio/wav`).
    pub fn content_type(self) -> &'static str {
        match self {
            DeclaredType::Flac => "audio/flac",
            DeclaredType::Mpeg => "audio/mpeg",
            DeclaredType::Mp4 => "audio/mp4",
            DeclaredType::Ogg => "audio/ogg",
            DeclaredType::Wav => "audio/wav",
        }
    }
}

impl std::fmt::Display for DeclaredType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.content_type())
    }
}

/// Limits applied while converting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest accepted input, in bytes.
    pub max_bytes: usize,
    /// Longest accepted audio, in milliseconds.
    pub max_duration_ms: u64,
}

impl Default for Limits {
    /// 20 MiB and 10 minutes.
    fn default() -> Self {
        Limits {
            max_bytes: 20 * 1024 * 1024,
            max_duration_ms: 10 * 60 * 1000,
        }
    }
}

impl Limits {
    /// Refuses an input larger than `max_bytes` before any of it is read.
    pub fn admit(&self, size: usize) -> Result<(), ConvertError> {
        if size > self.max_bytes {
            return Err(ConvertError::TooLarge {
                size,
                limit: self.max_bytes,
            });
        }
        Ok(())
    }
}

/// The result of a successful conversion.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Converted {
    /// A complete WAV file: RIFF header, 16-bit PCM, one channel, 8000 Hz.
    pub wav: Vec<u8>,
    /// Duration of the converted audio, in milliseconds.
    pub duration_ms: u64,
}

/// Why a conversion failed. [`ConvertError::reason`] gives the short reason of the API.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConvertError {
    /// The content is not audio of the declared type (its magic bytes say something else, or
    /// nothing known).
    #[error("not audio: {0}")]
    NotAudio(String),
    /// The content looks like the declared type but could not be decoded.
    #[error("undecodable: {0}")]
    Undecodable(String),
    /// The audio lasts longer than the duration limit.
    #[error("too long: the audio lasts more than {limit_ms} ms")]
    TooLong {
        /// The limit that was exceeded, in milliseconds.
        limit_ms: u64,
    },
    /// The input is larger than the size limit.
    #[error("too large: {size} bytes, the limit is {limit} bytes")]
    TooLarge {
        /// Size of the input, in bytes.
        size: usize,
        /// The limit, in bytes.
        limit: usize,
    },
}

impl ConvertError {
    /// The short reason: `not audio`, `undecodable`, `too long` or `too large`.
    pub fn reason(&self) -> &'static str {
        match self {
            ConvertError::NotAudio(_) => "not audio",
            ConvertError::Undecodable(_) => "undecodable",
            ConvertError::TooLong { .. } => "too long",
            ConvertError::TooLarge { .. } => "too large",
        }
    }
}

/// Converts `bytes` declared as `declared` into 8 kHz mono 16-bit PCM WAV.
///
/// Never panics on any input: content that does not match its declared type, truncated or
/// corrupt streams and over-limit files all end in a [`ConvertError`].
pub fn convert(
    bytes: &[u8],
    declared: DeclaredType,
    limits: &Limits,
) -> Result<Converted, ConvertError> {
    limits.admit(bytes.len())?;
    match sniff(bytes) {
        Some(found) if found == declared => {}
        Some(found) => {
            return Err(ConvertError::Undecodable(format!(
                "the content is {found}, not the declared {declared}"
            )));
        }
        None => {
            let what = sniff::describe_other(bytes)
                .map(|kind| format!("the content is {kind}, not {declared}"))
                .unwrap_or_else(|| format!("the content is not recognisable as {declared}"));
            return Err(ConvertError::NotAudio(what));
        }
    }
    // The decoders are third-party code fed with outside input: a panic in them must end in
    // an error for this file, not in a crashed worker.
    let work = std::panic::catch_unwind(|| decode::decode(bytes, limits.max_duration_ms));
    let mono8k = match work {
        Ok(result) => result?,
        Err(_) => {
            return Err(ConvertError::Undecodable(
                "the decoder failed on this data".into(),
            ));
        }
    };
    if mono8k.is_empty() {
        return Err(ConvertError::Undecodable(
            "the stream holds no audio samples".into(),
        ));
    }
    let duration_ms = mono8k.len() as u64 * 1000 / u64::from(TARGET_RATE);
    if duration_ms > limits.max_duration_ms {
        return Err(ConvertError::TooLong {
            limit_ms: limits.max_duration_ms,
        });
    }
    Ok(Converted {
        wav: wav::encode_mono_8k(&mono8k),
        duration_ms,
    })
}
