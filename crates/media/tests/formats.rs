//! Conversion of real files of every supported format: committed fixtures (0.3 s, 11025 Hz,
//! mono) and files produced during the test run by sox and ffmpeg (stereo, various rates).

#![allow(
    clippy::unwrap_used,
    clippy::too_many_lines,
    reason = "tests: a failed unwrap is a failed test, and a scenario reads best whole"
)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::assert_tone_1k;
use dialtone_media::{ConvertError, DeclaredType, Limits, convert, sniff};

fn fixture(name: &str) -> Vec<u8> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

const FIXTURES: [(&str, DeclaredType); 6] = [
    ("tone1k.wav", DeclaredType::Wav),
    ("tone1k.flac", DeclaredType::Flac),
    ("tone1k.mp3", DeclaredType::Mpeg),
    ("tone1k.m4a", DeclaredType::Mp4),
    ("tone1k.ogg", DeclaredType::Ogg),
    ("tone1k.opus", DeclaredType::Ogg),
];

#[test]
fn committed_fixtures_convert_to_a_1khz_tone() {
    for (name, declared) in FIXTURES {
        let bytes = fixture(name);
        assert_eq!(sniff(&bytes), Some(declared), "{name}");
        let out =
            convert(&bytes, declared, &Limits::default()).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_tone_1k(name, &out.wav, out.duration_ms, 300);
    }
}

fn tool(name: &str) -> bool {
    Command::new(name)
        .arg("--version")
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

/// Runs a generator; panics with its stderr when it fails.
fn run(cmd: &mut Command) {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Produces a 2-second 1 kHz tone of the given format with ffmpeg (or sox).
fn generate(dir: &Path, file: &str, rate: u32, args: &[&str]) -> PathBuf {
    let path = dir.join(file);
    if args.first() == Some(&"sox") {
        run(Command::new("sox")
            .args(["-n", "-r", &rate.to_string(), "-c", "2", "-b", "16"])
            .arg(&path)
            .args(["synth", "2", "sine", "1000", "vol", "0.5"]));
    } else {
        let source = format!("sine=frequency=1000:sample_rate={rate}:duration=2");
        run(Command::new("ffmpeg")
            .args([
                "-hide_banner",
                "-loglevel",
                "error",
                "-y",
                "-f",
                "lavfi",
                "-i",
                &source,
            ])
            .args(["-ac", "2"])
            .args(args)
            .arg(&path));
    }
    path
}

#[test]
fn files_made_by_sox_and_ffmpeg_convert_to_a_1khz_tone() {
    if !tool("ffmpeg") && !tool("sox") {
        // .ci/run installs both; a developer machine without them still runs the fixtures.
        assert!(
            std::env::var_os("DIALTONE_REQUIRE_PEERS").is_none(),
            "a required peer is missing: sox and ffmpeg"
        );
        eprintln!("SKIPPED: sox and ffmpeg not installed: skipping generated formats");
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let mut cases: Vec<(&str, u32, Vec<&str>, DeclaredType)> = Vec::new();
    if tool("sox") {
        cases.push(("sox.wav", 44_100, vec!["sox"], DeclaredType::Wav));
        cases.push(("sox.flac", 48_000, vec!["sox"], DeclaredType::Flac));
    }
    if tool("ffmpeg") {
        cases.extend([
            (
                "ff.wav",
                22_050,
                vec!["-c:a", "pcm_s16le"],
                DeclaredType::Wav,
            ),
            ("ff.flac", 44_100, vec!["-c:a", "flac"], DeclaredType::Flac),
            (
                "ff.mp3",
                44_100,
                vec!["-c:a", "libmp3lame", "-b:a", "128k"],
                DeclaredType::Mpeg,
            ),
            (
                "ff.m4a",
                48_000,
                vec!["-c:a", "aac", "-b:a", "96k"],
                DeclaredType::Mp4,
            ),
            (
                "ff.ogg",
                44_100,
                vec!["-c:a", "libvorbis", "-q:a", "4"],
                DeclaredType::Ogg,
            ),
            (
                "ff.opus",
                48_000,
                vec!["-c:a", "libopus", "-b:a", "64k"],
                DeclaredType::Ogg,
            ),
        ]);
    }
    for (file, rate, args, declared) in cases {
        let path = generate(dir.path(), file, rate, &args);
        let bytes = std::fs::read(&path).expect("read generated file");
        assert_eq!(sniff(&bytes), Some(declared), "{file}");
        let out =
            convert(&bytes, declared, &Limits::default()).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert_tone_1k(file, &out.wav, out.duration_ms, 2000);
    }
}

#[test]
fn declared_type_must_match_content() {
    let png = fixture("not-audio.png");
    let err = convert(&png, DeclaredType::Wav, &Limits::default()).expect_err("png");
    assert_eq!(err.reason(), "not audio");
    assert!(err.to_string().contains("PNG"), "{err}");

    let flac = fixture("tone1k.flac");
    let err = convert(&flac, DeclaredType::Wav, &Limits::default()).expect_err("flac as wav");
    assert_eq!(err.reason(), "undecodable");

    let err = convert(b"", DeclaredType::Mpeg, &Limits::default()).expect_err("empty");
    assert_eq!(err.reason(), "not audio");
}

#[test]
fn limits_are_enforced() {
    let wav = fixture("tone1k.wav");
    let small = Limits {
        max_bytes: 1000,
        max_duration_ms: 600_000,
    };
    let err = convert(&wav, DeclaredType::Wav, &small).expect_err("too large");
    assert_eq!(err.reason(), "too large");
    assert!(
        matches!(
            err,
            ConvertError::TooLarge {
                size: 6660,
                limit: 1000
            }
        ),
        "{err:?}"
    );

    let short = Limits {
        max_bytes: 1 << 20,
        max_duration_ms: 100,
    };
    for (name, declared) in FIXTURES {
        let err = convert(&fixture(name), declared, &short).expect_err(name);
        assert_eq!(err.reason(), "too long", "{name}");
    }
}

#[test]
fn damaged_files_end_in_an_error_or_audio_never_a_panic() {
    for (name, declared) in FIXTURES {
        let bytes = fixture(name);
        // Truncations.
        for cut in [4, 12, 44, 100, bytes.len() / 2, bytes.len() - 1] {
            let _ = convert(&bytes[..cut.min(bytes.len())], declared, &Limits::default());
        }
        // Corruptions: deterministic byte flips after the magic bytes.
        let mut seed = 0x9E37_79B9u32;
        for round in 0..40 {
            let mut damaged = bytes.clone();
            for _ in 0..(1 + round % 8) {
                seed ^= seed << 13;
                seed ^= seed >> 17;
                seed ^= seed << 5;
                let at = 4 + (seed as usize % (damaged.len() - 4));
                damaged[at] ^= (seed >> 8) as u8 | 1;
            }
            if let Err(e) = convert(&damaged, declared, &Limits::default()) {
                assert!(
                    ["not audio", "undecodable", "too long"].contains(&e.reason()),
                    "{name}: {e}"
                );
            }
        }
    }
    // Magic bytes followed by garbage.
    for (magic, declared) in [
        (&b"RIFF\0\0\0\0WAVE"[..], DeclaredType::Wav),
        (b"fLaC", DeclaredType::Flac),
        (b"OggS", DeclaredType::Ogg),
        (b"\0\0\0\x18ftypM4A ", DeclaredType::Mp4),
        (b"ID3", DeclaredType::Mpeg),
    ] {
        let mut bytes = magic.to_vec();
        bytes.extend((0..4000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8));
        let err = convert(&bytes, declared, &Limits::default()).expect_err("garbage");
        assert_eq!(err.reason(), "undecodable", "{declared}: {err}");
    }
}

#[test]
fn content_types() {
    for t in DeclaredType::ALL {
        assert_eq!(DeclaredType::from_content_type(t.content_type()), Some(t));
    }
    assert_eq!(
        DeclaredType::from_content_type("Audio/X-WAV"),
        Some(DeclaredType::Wav)
    );
    assert_eq!(
        DeclaredType::from_content_type("audio/ogg; codecs=opus"),
        Some(DeclaredType::Ogg)
    );
    assert_eq!(DeclaredType::from_content_type("image/png"), None);
    assert_eq!(DeclaredType::from_content_type(""), None);
}
