//! Resampling to [`TARGET_RATE`] with an anti-alias filter.

use rubato::{FftFixedIn, Resampler};

use crate::{ConvertError, TARGET_RATE};

/// Input frames per resampler call.
const CHUNK: usize = 1024;

/// Resamples mono `samples` at `rate` hertz to [`TARGET_RATE`].
///
/// rubato's synchronous FFT resampler low-passes below the lower of the two Nyquist
/// frequencies (a Blackman-Harris windowed cutoff), so content above 4 kHz is removed instead
/// of folding back into the telephony band. The resampler's delay is dropped and the output
/// is cut to exactly `len * 8000 / rate` frames, so durations are preserved.
pub(crate) fn to_target_rate(samples: &[f32], rate: u32) -> Result<Vec<f32>, ConvertError> {
    if rate == TARGET_RATE {
        return Ok(samples.to_vec());
    }
    let fail = |e: &dyn std::fmt::Display| ConvertError::Undecodable(format!("resampling ({e})"));
    let mut resampler = FftFixedIn::<f32>::new(rate as usize, TARGET_RATE as usize, CHUNK, 2, 1)
        .map_err(|e| fail(&e))?;
    let expected = usize::try_from(samples.len() as u64 * u64::from(TARGET_RATE) / u64::from(rate))
        .unwrap_or(usize::MAX);
    let delay = resampler.output_delay();
    let mut out = Vec::with_capacity(expected + delay + CHUNK);
    let mut pos = 0;
    loop {
        let need = resampler.input_frames_next();
        if pos + need > samples.len() {
            break;
        }
        let chunk = resampler
            .process(&[&samples[pos..pos + need]], None)
            .map_err(|e| fail(&e))?;
        out.extend_from_slice(&chunk[0]);
        pos += need;
    }
    if pos < samples.len() {
        let chunk = resampler
            .process_partial(Some(&[&samples[pos..]]), None)
            .map_err(|e| fail(&e))?;
        out.extend_from_slice(&chunk[0]);
    }
    // Flush the filter's delay line.
    while out.len() < expected + delay {
        let chunk = resampler
            .process_partial::<&[f32]>(None, None)
            .map_err(|e| fail(&e))?;
        if chunk[0].is_empty() {
            break;
        }
        out.extend_from_slice(&chunk[0]);
    }
    let start = delay.min(out.len());
    let end = (start + expected).min(out.len());
    Ok(out[start..end].to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tone(freq: f32, rate: u32, seconds: f32) -> Vec<f32> {
        let n = (rate as f32 * seconds) as usize;
        (0..n)
            .map(|i| (2.0 * std::f32::consts::PI * freq * i as f32 / rate as f32).sin() * 0.5)
            .collect()
    }

    fn rms(x: &[f32]) -> f32 {
        (x.iter().map(|s| s * s).sum::<f32>() / x.len() as f32).sqrt()
    }

    #[test]
    fn keeps_duration_and_passband() {
        for rate in [11_025, 16_000, 22_050, 44_100, 48_000] {
            let out = to_target_rate(&tone(1000.0, rate, 1.0), rate).expect("resample");
            assert_eq!(out.len(), 8000, "{rate}");
            let level = rms(&out[800..7200]);
            assert!((level - 0.3535).abs() < 0.02, "{rate}: rms {level}");
        }
    }

    #[test]
    fn removes_content_above_nyquist() {
        // A 6 kHz tone would alias to 2 kHz without the low-pass filter.
        let out = to_target_rate(&tone(6000.0, 48_000, 1.0), 48_000).expect("resample");
        assert!(rms(&out[800..7200]) < 0.01, "rms {}", rms(&out[800..7200]));
    }

    #[test]
    fn short_input() {
        assert_eq!(
            to_target_rate(&[0.1; 10], 44_100).expect("resample").len(),
            1
        );
        assert!(to_target_rate(&[], 44_100).expect("resample").is_empty());
    }
}
