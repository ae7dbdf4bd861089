//! Conversion throughput per format: seconds of audio converted per second of CPU.
//!
//! `cargo run --release -p dialtone-media --example throughput [-- SECONDS]`
//!
//! Makes a SECONDS-long (default 60) stereo test signal (a 1 kHz tone, a sweep and noise) in
//! each upload format with ffmpeg, converts each file to 8 kHz mono WAV on one thread, and
//! reports the CPU time of that thread (Linux `schedstat`; wall time elsewhere).

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use dialtone_media::{DeclaredType, Limits, convert};

/// CPU time of the current thread, in seconds (wall-clock fallback).
fn thread_cpu_seconds(start: Instant) -> f64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .map_or_else(|| start.elapsed().as_secs_f64(), |ns| ns as f64 / 1e9)
}

fn make(dir: &Path, file: &str, rate: u32, seconds: u64, codec: &[&str]) -> Option<Vec<u8>> {
    let path = dir.join(file);
    let source = format!(
        "sine=frequency=1000:sample_rate={rate}:duration={seconds}[a];\
         aevalsrc=0.3*sin(2*PI*(100+50*t)*t):s={rate}:d={seconds}[b];\
         anoisesrc=a=0.05:r={rate}:d={seconds}[c];[a][b][c]amix=inputs=3[out]"
    );
    let status = Command::new("ffmpeg")
        .args([
            "-hide_banner",
            "-loglevel",
            "error",
            "-y",
            "-filter_complex",
            &source,
        ])
        .args(["-map", "[out]", "-ac", "2"])
        .args(codec)
        .arg(&path)
        .status()
        .ok()?;
    status
        .success()
        .then(|| std::fs::read(&path).ok())
        .flatten()
}

fn main() {
    let seconds: u64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(60);
    let dir = tempfile::tempdir().expect("temp dir");
    let cases: [(&str, u32, &[&str], DeclaredType); 6] = [
        (
            "wav 44.1 kHz stereo",
            44_100,
            &["-c:a", "pcm_s16le", "-f", "wav"],
            DeclaredType::Wav,
        ),
        (
            "flac 44.1 kHz stereo",
            44_100,
            &["-c:a", "flac", "-f", "flac"],
            DeclaredType::Flac,
        ),
        (
            "mp3 44.1 kHz 128k",
            44_100,
            &["-c:a", "libmp3lame", "-b:a", "128k", "-f", "mp3"],
            DeclaredType::Mpeg,
        ),
        (
            "aac/m4a 48 kHz 128k",
            48_000,
            &["-c:a", "aac", "-b:a", "128k", "-f", "ipod"],
            DeclaredType::Mp4,
        ),
        (
            "ogg vorbis 44.1 kHz q4",
            44_100,
            &["-c:a", "libvorbis", "-q:a", "4", "-f", "ogg"],
            DeclaredType::Ogg,
        ),
        (
            "ogg opus 48 kHz 64k",
            48_000,
            &["-c:a", "libopus", "-b:a", "64k", "-f", "ogg"],
            DeclaredType::Ogg,
        ),
    ];
    let limits = Limits {
        max_bytes: usize::MAX,
        max_duration_ms: 24 * 3600 * 1000,
    };
    println!("{seconds} s of audio per format, one thread\n");
    println!(
        "{:<24} {:>10} {:>10} {:>14}",
        "format", "input KiB", "CPU s", "audio s / CPU s"
    );
    for (i, (label, rate, codec, declared)) in cases.iter().enumerate() {
        let Some(bytes) = make(dir.path(), &format!("in{i}"), *rate, seconds, codec) else {
            println!("{label:<24} (ffmpeg could not make it: install ffmpeg)");
            continue;
        };
        let start = Instant::now();
        let before = thread_cpu_seconds(start);
        let out = convert(&bytes, *declared, &limits).expect("conversion");
        let cpu = thread_cpu_seconds(start) - before;
        let audio = out.duration_ms as f64 / 1000.0;
        println!(
            "{label:<24} {:>10} {:>10.3} {:>14.0}",
            bytes.len() / 1024,
            cpu,
            audio / cpu
        );
    }
}
