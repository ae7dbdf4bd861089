//! Hostile uploads: headers that claim absurd sample rates or channel counts are refused
//! before anything is sized from them, and an edit list cannot make the decoder process
//! more audio than the duration limit.

#![allow(
    clippy::unwrap_used,
    clippy::too_many_lines,
    reason = "tests: a failed unwrap is a failed test, and a scenario reads best whole"
)]

use std::process::Command;

use dialtone_media::{ConvertError, DeclaredType, Limits, convert};

/// A PCM WAV file whose header claims `rate` Hz and `channels` channels, with `data_bytes`
/// of silence (8,044 bytes in all for 8,000 bytes of data, as in the report).
fn wav(rate: u32, channels: u16, data_bytes: u32) -> Vec<u8> {
    let block_align = channels.saturating_mul(2);
    let byte_rate = rate.saturating_mul(u32::from(block_align));
    let mut out = Vec::new();
    out.extend_from_slice(b"RIFF");
    out.extend_from_slice(&(36 + data_bytes).to_le_bytes());
    out.extend_from_slice(b"WAVEfmt ");
    out.extend_from_slice(&16u32.to_le_bytes());
    out.extend_from_slice(&1u16.to_le_bytes());
    out.extend_from_slice(&channels.to_le_bytes());
    out.extend_from_slice(&rate.to_le_bytes());
    out.extend_from_slice(&byte_rate.to_le_bytes());
    out.extend_from_slice(&block_align.to_le_bytes());
    out.extend_from_slice(&16u16.to_le_bytes());
    out.extend_from_slice(b"data");
    out.extend_from_slice(&data_bytes.to_le_bytes());
    out.resize(out.len() + data_bytes as usize, 0);
    out
}

fn refused(bytes: &[u8]) -> String {
    match convert(bytes, DeclaredType::Wav, &Limits::default()) {
        Err(ConvertError::Undecodable(why)) => why,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[test]
fn absurd_sample_rates_are_refused_before_any_buffer() {
    let bomb = wav(2_147_483_647, 1, 8_000);
    assert_eq!(bomb.len(), 8_044);
    assert!(refused(&bomb).contains("unsupported sample rate 2147483647 Hz"));
    assert!(refused(&wav(1_000_000, 1, 8_000)).contains("unsupported sample rate 1000000 Hz"));
    assert!(refused(&wav(10, 1, 8_000)).contains("unsupported sample rate 10 Hz"));
    // The highest accepted rate still converts.
    let ok = convert(
        &wav(384_000, 1, 76_800),
        DeclaredType::Wav,
        &Limits::default(),
    );
    assert!(ok.is_ok(), "{ok:?}");
}

#[test]
fn absurd_channel_counts_are_refused() {
    let why = refused(&wav(8_000, 4_000, 8_000));
    assert!(why.contains("channel"), "{why}");
    let ok = convert(&wav(8_000, 2, 8_000), DeclaredType::Wav, &Limits::default());
    assert!(ok.is_ok(), "{ok:?}");
}

/// An MP4 whose edit list says to drop the first 28 s of a 30 s track: the audible part
/// (2 s) is under a 5 s limit, but decoding 30 s of audio to reach it is refused.
#[test]
fn an_edit_list_does_not_buy_decoding_beyond_the_limit() {
    let has_ffmpeg = Command::new("ffmpeg")
        .arg("-version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !has_ffmpeg {
        assert!(
            std::env::var_os("DIALTONE_REQUIRE_PEERS").is_none(),
            "a required peer is missing: ffmpeg"
        );
        eprintln!("SKIPPED: ffmpeg not installed");
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("long.m4a");
    let out = Command::new("ffmpeg")
        .args([
            "-v",
            "error",
            "-f",
            "lavfi",
            "-i",
            "sine=frequency=1000:sample_rate=8000:duration=30",
        ])
        .args(["-c:a", "aac", "-b:a", "16k"])
        .arg(&path)
        .output()
        .expect("ffmpeg runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut bytes = std::fs::read(&path).expect("read");
    let limits = Limits {
        max_duration_ms: 5_000,
        ..Limits::default()
    };
    assert!(matches!(
        convert(&bytes, DeclaredType::Mp4, &limits),
        Err(ConvertError::TooLong { .. })
    ));
    // Rewrite the first edit: skip 28 s (in media timescale units, 8 kHz), keep the rest.
    let at = bytes
        .windows(4)
        .position(|w| w == b"elst")
        .expect("ffmpeg writes an edit list");
    let version = bytes[at + 4];
    assert_eq!(version, 0, "a version 0 edit list");
    let entry = at + 4 + 4 + 4;
    bytes[entry + 4..entry + 8].copy_from_slice(&(28 * 8_000u32).to_be_bytes());
    match convert(&bytes, DeclaredType::Mp4, &limits) {
        Err(ConvertError::TooLong { limit_ms }) => assert_eq!(limit_ms, 5_000),
        other => panic!("28 s decoded for 2 s kept: {other:?}"),
    }
}
