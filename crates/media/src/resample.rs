//! Resampling to [`TARGET_RATE`] with an anti-alias filter.

use rubato::{FftFixedIn, Resampler};

use crate::{ConvertError, TARGET_RATE};

/// Input frames per resampler call.
const CHUNK: usize = 1024;

/// Streaming resampler from a source rate to [`TARGET_RATE`], mono.
///
/// rubato's synchronous FFT resampler low-passes below the lower of the two Nyquist
/// frequencies (a Blackman-Harris windowed cutoff), so content above 4 kHz is removed instead
/// of folding back into the telephony band. [`Resampling::finish`] drops the resampler's delay
/// and cuts the output to exactly `input frames * 8000 / rate`, so durations are preserved.
pub(crate) struct Resampling {
    rate: u32,
    /// None when the source is already at the target rate.
    inner: Option<FftFixedIn<f32>>,
    pending: Vec<f32>,
    out: Vec<f32>,
    input_frames: u64,
}

fn fail(e: &dyn std::fmt::Display) -> ConvertError {
    ConvertError::Undecodable(format!("resampling ({e})"))
}

impl Resampling {
    /// A resampler from `rate` hertz.
    pub(crate) fn new(rate: u32) -> Result<Resampling, ConvertError> {
        let inner = if rate == TARGET_RATE {
            None
        } else {
            Some(
                FftFixedIn::<f32>::new(rate as usize, TARGET_RATE as usize, CHUNK, 2, 1)
                    .map_err(|e| fail(&e))?,
            )
        };
        Ok(Resampling {
            rate,
            inner,
            pending: Vec::new(),
            out: Vec::new(),
            input_frames: 0,
        })
    }

    /// Takes more input.
    pub(crate) fn push(&mut self, samples: &[f32]) -> Result<(), ConvertError> {
        self.input_frames += samples.len() as u64;
        let Some(inner) = &mut self.inner else {
            self.out.extend_from_slice(samples);
            return Ok(());
        };
        self.pending.extend_from_slice(samples);
        let mut used = 0;
        loop {
            let need = inner.input_frames_next();
            if self.pending.len() - used < need {
                break;
            }
            let chunk = inner
                .process(&[&self.pending[used..used + need]], None)
                .map_err(|e| fail(&e))?;
            self.out.extend_from_slice(&chunk[0]);
            used += need;
        }
        self.pending.drain(..used);
        Ok(())
    }

    /// Flushes the filter and returns the output.
    pub(crate) fn finish(mut self) -> Result<Vec<f32>, ConvertError> {
        let expected =
            usize::try_from(self.input_frames * u64::from(TARGET_RATE) / u64::from(self.rate))
                .unwrap_or(usize::MAX);
        let Some(inner) = &mut self.inner else {
            return Ok(self.out);
        };
        if !self.pending.is_empty() {
            let chunk = inner
                .process_partial(Some(&[&self.pending[..]]), None)
                .map_err(|e| fail(&e))?;
            self.out.extend_from_slice(&chunk[0]);
        }
        let delay = inner.output_delay();
        while self.out.len() < expected.saturating_add(delay) {
            let chunk = inner
                .process_partial::<&[f32]>(None, None)
                .map_err(|e| fail(&e))?;
            if chunk[0].is_empty() {
                break;
            }
            self.out.extend_from_slice(&chunk[0]);
        }
        let start = delay.min(self.out.len());
        let end = start.saturating_add(expected).min(self.out.len());
        self.out.truncate(end);
        self.out.drain(..start);
        Ok(self.out)
    }
}

/// Resamples mono `samples` at `rate` hertz to [`TARGET_RATE`] in one go.
#[cfg(test)]
fn to_target_rate(samples: &[f32], rate: u32) -> Result<Vec<f32>, ConvertError> {
    let mut r = Resampling::new(rate)?;
    // Uneven pieces, as decoders deliver them.
    for piece in samples.chunks(777) {
        r.push(piece)?;
    }
    r.finish()
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
