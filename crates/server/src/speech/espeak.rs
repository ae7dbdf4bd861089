//! espeak-ng, run as a process per text: its WAV (22.05 kHz) read from its standard output
//! within a size bound and a time limit.

use std::process::Stdio;
use std::time::Duration;

use tokio::io::AsyncReadExt;

use super::error::SpeechError;

/// Longest a synthesis may take.
const TIMEOUT: Duration = Duration::from_secs(10);
/// Most bytes read from the engine (about 10 minutes at 22.05 kHz).
pub(super) const MAX_OUTPUT: u64 = 26 * 1024 * 1024;
/// The program.
const PROGRAM: &str = "espeak-ng";

/// The espeak-ng voice of a BCP 47 language: `en-US` is `en-us`, `fr-FR` is `fr-fr`, a
/// language it does not have falls back to its base (`de-AT` is `de`), else English.
pub(super) fn voice(language: &str) -> &'static str {
    let tag: String = language
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
        .take(20)
        .collect::<String>()
        .replace('_', "-")
        .to_ascii_lowercase();
    const KNOWN: &[&str] = &[
        "en-us", "en-gb", "en", "fr-fr", "fr-be", "fr-ch", "fr", "de", "es", "es-419", "it", "pt",
        "pt-br", "nl", "sv", "da", "nb", "fi", "pl", "cs", "ru", "tr", "el", "ja", "zh", "ar",
        "hi",
    ];
    if let Some(known) = KNOWN.iter().find(|k| **k == tag) {
        return known;
    }
    let base = tag.split('-').next().unwrap_or_default();
    match base {
        "fr" => "fr-fr",
        "en" => "en-us",
        b => KNOWN.iter().find(|k| **k == b).copied().unwrap_or("en-us"),
    }
}

/// Speaks `text` with `voice` (an espeak-ng voice and variant, `en-gb+f3`): its WAV.
pub(super) async fn synthesize(voice: &str, text: &str) -> Result<Vec<u8>, SpeechError> {
    let mut child = tokio::process::Command::new(PROGRAM)
        .args(["-v", voice, "-s", "165", "--stdout", "--", text])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => SpeechError::Missing(PROGRAM),
            _ => SpeechError::Failed(e.to_string()),
        })?;
    let mut wav = Vec::new();
    let read = async {
        if let Some(out) = child.stdout.take() {
            out.take(MAX_OUTPUT).read_to_end(&mut wav).await?;
        }
        child.wait().await
    };
    let status = tokio::time::timeout(TIMEOUT, read)
        .await
        .map_err(|_| SpeechError::Failed("timed out".into()))?
        .map_err(|e| SpeechError::Failed(e.to_string()))?;
    if !status.success() {
        return Err(SpeechError::Failed(format!("exited with {status}")));
    }
    Ok(wav)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn voices_of_languages() {
        assert_eq!(voice("en-US"), "en-us");
        assert_eq!(voice("en-GB"), "en-gb");
        assert_eq!(voice("fr-CA"), "fr-fr");
        assert_eq!(voice("de-AT"), "de");
        assert_eq!(voice("xx-YY"), "en-us");
        assert_eq!(voice("-v;rm -rf"), "en-us");
    }
}
