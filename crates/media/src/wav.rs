//! WAV writing and reading (16-bit PCM, RIFF/WAVE).

use crate::TARGET_RATE;

/// Encodes mono samples in `[-1, 1]` as a 16-bit PCM mono WAV at [`TARGET_RATE`].
pub(crate) fn encode_mono_8k(samples: &[f32]) -> Vec<u8> {
    let pcm: Vec<i16> = samples
        .iter()
        .map(|s| {
            let scaled = (s * 32767.0).round();
            if scaled.is_nan() {
                0
            } else {
                scaled.clamp(-32768.0, 32767.0) as i16
            }
        })
        .collect();
    encode_pcm16(&pcm, TARGET_RATE, 1)
}

/// A WAV file of 8 kHz mono 16-bit samples (the converted format): what a call recorded.
pub fn pcm_wav(pcm: &[i16]) -> Vec<u8> {
    encode_pcm16(pcm, TARGET_RATE, 1)
}

/// A 16-bit PCM WAV file of `pcm` (interleaved when `channels` > 1).
fn encode_pcm16(pcm: &[i16], rate: u32, channels: u16) -> Vec<u8> {
    let data_len = (pcm.len() * 2) as u32;
    let block_align = channels * 2;
    let mut out = Vec::with_capacity(44 + pcm.len() * 2);
    out.extend_from_slice(b"RIFF");
    out.extend_from_slice(&(36 + data_len).to_le_bytes());
    out.extend_from_slice(b"WAVE");
    out.extend_from_slice(b"fmt ");
    out.extend_from_slice(&16u32.to_le_bytes());
    out.extend_from_slice(&1u16.to_le_bytes()); // PCM
    out.extend_from_slice(&channels.to_le_bytes());
    out.extend_from_slice(&rate.to_le_bytes());
    out.extend_from_slice(&(rate * u32::from(block_align)).to_le_bytes());
    out.extend_from_slice(&block_align.to_le_bytes());
    out.extend_from_slice(&16u16.to_le_bytes());
    out.extend_from_slice(b"data");
    out.extend_from_slice(&data_len.to_le_bytes());
    for s in pcm {
        out.extend_from_slice(&s.to_le_bytes());
    }
    out
}

/// A WAV file of `duration_ms` milliseconds of silence, 8 kHz mono 16-bit (the converted
/// format), e.g. for simulated recordings.
pub fn silence_wav(duration_ms: u64) -> Vec<u8> {
    let frames = usize::try_from(duration_ms * u64::from(TARGET_RATE) / 1000).unwrap_or(0);
    encode_pcm16(&vec![0; frames], TARGET_RATE, 1)
}

/// `(sample rate, channels, duration in ms)` of a PCM WAV file, or `None` when `bytes` is not
/// a well-formed RIFF/WAVE file with a `fmt ` chunk before its `data` chunk.
pub fn wav_info(bytes: &[u8]) -> Option<(u32, u16, u64)> {
    if bytes.len() < 12 || &bytes[0..4] != b"RIFF" || &bytes[8..12] != b"WAVE" {
        return None;
    }
    let mut pos = 12usize;
    let mut fmt: Option<(u32, u16, u16)> = None;
    while pos.checked_add(8)? <= bytes.len() {
        let id = &bytes[pos..pos + 4];
        let len = u32::from_le_bytes(bytes[pos + 4..pos + 8].try_into().ok()?) as usize;
        let body = pos + 8;
        if id == b"fmt " {
            let chunk = bytes.get(body..body.checked_add(16)?)?;
            let channels = u16::from_le_bytes([chunk[2], chunk[3]]);
            let rate = u32::from_le_bytes([chunk[4], chunk[5], chunk[6], chunk[7]]);
            let block_align = u16::from_le_bytes([chunk[12], chunk[13]]);
            fmt = Some((rate, channels, block_align));
        } else if id == b"data" {
            let (rate, channels, block_align) = fmt?;
            if rate == 0 || block_align == 0 {
                return None;
            }
            let available = bytes.len() - body;
            let frames = (len.min(available) / usize::from(block_align)) as u64;
            return Some((rate, channels, frames * 1000 / u64::from(rate)));
        }
        pos = body.checked_add(len)?.checked_add(len % 2)?;
    }
    None
}

/// The 16-bit samples of the `data` chunk of a WAV file (for tests and analysis).
pub fn wav_samples(bytes: &[u8]) -> Option<Vec<i16>> {
    wav_info(bytes)?;
    let mut pos = 12usize;
    while pos + 8 <= bytes.len() {
        let len = u32::from_le_bytes(bytes[pos + 4..pos + 8].try_into().ok()?) as usize;
        if &bytes[pos..pos + 4] == b"data" {
            let end = (pos + 8).checked_add(len)?.min(bytes.len());
            let data = &bytes[pos + 8..end];
            return Some(
                data.chunks_exact(2)
                    .map(|c| i16::from_le_bytes([c[0], c[1]]))
                    .collect(),
            );
        }
        pos = (pos + 8).checked_add(len)?.checked_add(len % 2)?;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn silence_round_trips() {
        let wav = silence_wav(1500);
        assert_eq!(wav.len(), 44 + 12_000 * 2);
        assert_eq!(wav_info(&wav), Some((8000, 1, 1500)));
        assert_eq!(wav_samples(&wav).map(|s| s.len()), Some(12_000));
    }

    #[test]
    fn garbage_is_not_wav() {
        assert_eq!(wav_info(b""), None);
        assert_eq!(wav_info(b"RIFF\0\0\0\0WAVEdata\xff\xff\xff\xff"), None);
        assert_eq!(wav_info(b"RIFF\0\0\0\0WAVEfmt \xff\xff\xff\xff"), None);
    }

    #[test]
    fn clamps_out_of_range_samples() {
        let wav = encode_mono_8k(&[2.0, -2.0, f32::NAN, 0.5]);
        assert_eq!(wav_samples(&wav), Some(vec![32767, -32768, 0, 16384]));
    }
}
