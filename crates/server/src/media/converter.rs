//! Audio conversion in a child process with a memory and a CPU budget.
//!
//! The decoders are third-party code fed with outside input, and a header can make one size
//! a buffer from a lie. A decoder that tries to allocate 8 GiB aborts its process, and no
//! `catch_unwind` stops an abort: converting in the server's own process let one 8 KB upload
//! take the server down, and again at each restart. So conversion runs in a child process
//! (this same binary, `dialtone convert-audio`), which limits its own address space and CPU
//! time (`setrlimit`) before it reads anything; the server waits for it within a wall-clock
//! bound and kills it past that. A child that dies is that file's `error`, never the
//! server's.
//!
//! The exchange: the original bytes on the child's stdin; on its stdout one line, `ok
//! DURATION_MS` then the WAV bytes, or `err REASON` where REASON is a [`ConvertError`]'s
//! message.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use dialtone_media::{ConvertError, Converted, DeclaredType, Limits};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Where and within which budget conversions run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Budget {
    /// The dialtone binary that runs `convert-audio`.
    pub binary: PathBuf,
    /// Most address space the child may map, in MiB.
    pub memory_mb: u64,
    /// Most CPU time the child may use, in seconds (the wall-clock bound is twice that).
    pub cpu_secs: u64,
}

/// The subcommand the child runs.
pub(crate) const SUBCOMMAND: &str = "convert-audio";

/// Converts `bytes` declared as `declared` in a child process within `budget`.
pub async fn convert(
    budget: &Budget,
    bytes: Vec<u8>,
    declared: DeclaredType,
    limits: &Limits,
) -> Result<Converted, ConvertError> {
    limits.admit(bytes.len())?;
    let spawned = tokio::process::Command::new(&budget.binary)
        .arg(SUBCOMMAND)
        .args(["--content-type", declared.content_type()])
        .args(["--max-bytes", &limits.max_bytes.to_string()])
        .args(["--max-duration-ms", &limits.max_duration_ms.to_string()])
        .args(["--memory-mb", &budget.memory_mb.to_string()])
        .args(["--cpu-secs", &budget.cpu_secs.to_string()])
        .env_clear()
        // mimalloc (the binary's allocator) reserves 1 GiB of address space for its first
        // arena before `main`: the child's own `RLIMIT_AS` would then neither bound what
        // the decoder takes from that arena nor leave room for anything else. Without an
        // arena every allocation maps its own memory, which the limit counts.
        .env("MIMALLOC_ARENA_RESERVE", "0")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn();
    let mut child = spawned.map_err(|e| {
        tracing::error!(binary = %budget.binary.display(), error = %e, "cannot start the audio converter");
        ConvertError::Undecodable("the converter could not be started".into())
    })?;
    let (Some(mut stdin), Some(mut stdout)) = (child.stdin.take(), child.stdout.take()) else {
        return Err(ConvertError::Undecodable(
            "the converter has no pipes".into(),
        ));
    };
    let exchange = async {
        let feed = async move {
            // A child that stops reading (it died) ends the write: its exit status says why.
            let _ = stdin.write_all(&bytes).await;
            drop(stdin);
        };
        let mut answer = Vec::new();
        let read = stdout.read_to_end(&mut answer);
        let ((), read) = tokio::join!(feed, read);
        let status = child.wait().await;
        (read.map(|_| answer), status)
    };
    let wall = Duration::from_secs(budget.cpu_secs.saturating_mul(2).max(1));
    let Ok((answer, status)) = tokio::time::timeout(wall, exchange).await else {
        // Dropping the exchange drops the child, which kills it.
        return Err(over_time(budget));
    };
    let answer = answer.map_err(|e| ConvertError::Undecodable(format!("converter output: {e}")))?;
    match status {
        Ok(s) if s.success() => parse_answer(&answer),
        Ok(s) => Err(died(budget, s)),
        Err(e) => Err(ConvertError::Undecodable(format!("converter: {e}"))),
    }
}

fn over_time(budget: &Budget) -> ConvertError {
    ConvertError::Undecodable(format!(
        "the conversion took longer than its budget ({} s of CPU)",
        budget.cpu_secs
    ))
}

fn died(budget: &Budget, status: std::process::ExitStatus) -> ConvertError {
    use std::os::unix::process::ExitStatusExt;
    match status.signal() {
        // SIGXCPU (24) is the soft CPU limit, SIGKILL the hard one.
        Some(24 | 9) => over_time(budget),
        _ => ConvertError::Undecodable(format!(
            "the decoder exceeded its memory budget ({} MiB) or crashed on this data",
            budget.memory_mb
        )),
    }
}

/// Reads the child's answer.
fn parse_answer(answer: &[u8]) -> Result<Converted, ConvertError> {
    let newline = answer
        .iter()
        .position(|&b| b == b'\n')
        .ok_or_else(|| ConvertError::Undecodable("the converter answered nothing".into()))?;
    let head = std::str::from_utf8(&answer[..newline])
        .map_err(|_| ConvertError::Undecodable("the converter's answer is not text".into()))?;
    let body = &answer[newline + 1..];
    match head.split_once(' ') {
        Some(("ok", ms)) => Ok(Converted {
            duration_ms: ms
                .parse()
                .map_err(|_| ConvertError::Undecodable("bad duration from the converter".into()))?,
            wav: body.to_vec(),
        }),
        Some(("err", reason)) => Err(error_from(reason)),
        _ => Err(ConvertError::Undecodable(
            "unreadable converter answer".into(),
        )),
    }
}

/// A [`ConvertError`] from its message (`not audio: ...`, `undecodable: ...`, ...).
fn error_from(message: &str) -> ConvertError {
    let detail = |prefix: &str| message.strip_prefix(prefix).unwrap_or(message).to_owned();
    if message.starts_with("not audio: ") {
        ConvertError::NotAudio(detail("not audio: "))
    } else if message.starts_with("too long") {
        let limit_ms = message
            .split_whitespace()
            .find_map(|w| w.parse().ok())
            .unwrap_or(0);
        ConvertError::TooLong { limit_ms }
    } else if message.starts_with("too large") {
        ConvertError::TooLarge { size: 0, limit: 0 }
    } else {
        ConvertError::Undecodable(detail("undecodable: "))
    }
}

/// The child's options.
#[derive(Debug, clap::Args)]
pub struct ChildArgs {
    /// The declared content type.
    #[arg(long)]
    content_type: String,
    /// Largest input, in bytes.
    #[arg(long)]
    max_bytes: usize,
    /// Longest audio, in milliseconds.
    #[arg(long)]
    max_duration_ms: u64,
    /// Address space budget, in MiB.
    #[arg(long)]
    memory_mb: u64,
    /// CPU budget, in seconds.
    #[arg(long)]
    cpu_secs: u64,
}

/// The child's side: limits itself, converts stdin, answers on stdout. The exit code is 0
/// whatever the conversion gave; only a crash (the budget) ends it otherwise.
pub fn run_child(args: &ChildArgs) -> std::process::ExitCode {
    use rustix::process::{Resource, Rlimit, setrlimit};
    let bytes = |mb: u64| mb.saturating_mul(1024 * 1024);
    let memory = Rlimit {
        current: Some(bytes(args.memory_mb)),
        maximum: Some(bytes(args.memory_mb)),
    };
    let cpu = Rlimit {
        current: Some(args.cpu_secs),
        maximum: Some(args.cpu_secs.saturating_add(1)),
    };
    if setrlimit(Resource::As, memory).is_err() || setrlimit(Resource::Cpu, cpu).is_err() {
        return std::process::ExitCode::from(3);
    }
    let mut input = Vec::new();
    let limit = u64::try_from(args.max_bytes)
        .unwrap_or(u64::MAX)
        .saturating_add(1);
    if std::io::stdin()
        .take(limit)
        .read_to_end(&mut input)
        .is_err()
    {
        return std::process::ExitCode::from(4);
    }
    let result = match DeclaredType::from_content_type(&args.content_type) {
        Some(declared) => dialtone_media::convert(
            &input,
            declared,
            &Limits {
                max_bytes: args.max_bytes,
                max_duration_ms: args.max_duration_ms,
            },
        ),
        None => Err(ConvertError::NotAudio(format!(
            "unsupported content type {:?}",
            args.content_type
        ))),
    };
    drop(input);
    let mut out = std::io::stdout().lock();
    let written = match result {
        Ok(done) => {
            writeln!(out, "ok {}", done.duration_ms).and_then(|()| out.write_all(&done.wav))
        }
        Err(e) => writeln!(out, "err {}", single_line(&e.to_string())),
    };
    match written.and_then(|()| out.flush()) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(_) => std::process::ExitCode::from(5),
    }
}

fn single_line(text: &str) -> String {
    text.replace(['\n', '\r'], " ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_read_back() {
        let ok = parse_answer(b"ok 1500\nRIFFdata").unwrap();
        assert_eq!(
            (ok.duration_ms, ok.wav.as_slice()),
            (1500, &b"RIFFdata"[..])
        );
        for e in [
            ConvertError::NotAudio("the content is PNG".into()),
            ConvertError::Undecodable("unsupported sample rate 10 Hz".into()),
            ConvertError::TooLong { limit_ms: 600_000 },
        ] {
            let line = format!("err {e}\n");
            assert_eq!(parse_answer(line.as_bytes()), Err(e));
        }
        assert!(parse_answer(b"").is_err());
    }
}
