//! Shared checks of converted audio.

#![allow(dead_code)]

use dialtone_media::{wav_info, wav_samples};

/// Power of `freq` in `samples` at `rate` (Goertzel algorithm), normalised by length.
pub(crate) fn goertzel(samples: &[f32], rate: f32, freq: f32) -> f32 {
    let w = 2.0 * std::f32::consts::PI * freq / rate;
    let coeff = 2.0 * w.cos();
    let (mut s1, mut s2) = (0f32, 0f32);
    for &x in samples {
        let s0 = x + coeff * s1 - s2;
        s2 = s1;
        s1 = s0;
    }
    (s1 * s1 + s2 * s2 - coeff * s1 * s2) / (samples.len() as f32).powi(2)
}

/// Asserts that `wav` is 8 kHz mono 16-bit, lasts `expected_ms` within 50 ms, and that its
/// middle part is a 1 kHz tone: the 1 kHz bin dominates its neighbours by 20 dB, and the
/// zero-crossing rate is about 2000 per second.
pub(crate) fn assert_tone_1k(label: &str, wav: &[u8], duration_ms: u64, expected_ms: u64) {
    let (rate, channels, info_ms) = wav_info(wav).unwrap_or_else(|| panic!("{label}: not a WAV"));
    assert_eq!((rate, channels), (8000, 1), "{label}: format");
    assert_eq!(&wav[20..22], &[1, 0], "{label}: PCM");
    assert_eq!(&wav[34..36], &[16, 0], "{label}: 16-bit");
    assert_eq!(info_ms, duration_ms, "{label}: reported duration");
    assert!(
        duration_ms.abs_diff(expected_ms) <= 50,
        "{label}: duration {duration_ms} ms, expected {expected_ms} ms"
    );
    let samples: Vec<f32> = wav_samples(wav)
        .expect("samples")
        .iter()
        .map(|&s| f32::from(s) / 32768.0)
        .collect();
    // Leave out the edges (encoder ramps, filter transients).
    let edge = samples.len() / 5;
    let middle = &samples[edge..samples.len() - edge];
    assert!(middle.len() >= 400, "{label}: too short to analyse");
    let tone = goertzel(middle, 8000.0, 1000.0);
    for other in [300.0, 500.0, 700.0, 1300.0, 1500.0, 2000.0, 3000.0, 3500.0] {
        let p = goertzel(middle, 8000.0, other);
        assert!(
            tone > p * 100.0,
            "{label}: 1 kHz power {tone} not dominant over {other} Hz ({p})"
        );
    }
    let crossings = middle
        .windows(2)
        .filter(|w| (w[0] < 0.0) != (w[1] < 0.0))
        .count();
    let per_second = crossings as f32 * 8000.0 / middle.len() as f32;
    assert!(
        (per_second - 2000.0).abs() < 100.0,
        "{label}: {per_second} zero crossings/s"
    );
    let rms = (middle.iter().map(|s| s * s).sum::<f32>() / middle.len() as f32).sqrt();
    assert!(rms > 0.05, "{label}: tone level too low ({rms})");
}
