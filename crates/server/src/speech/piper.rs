//! Piper, the neural voice: its own command line (`python3 -m piper`, PyPI `piper-tts`, GPL-3,
//! so it runs as a process of its own) kept running per voice with the voice loaded, fed
//! one line of text at a time; it writes each line's WAV into a directory of ours and says
//! so on its standard error. Loading a voice takes about a second; a warm process speaks a
//! sentence in a few hundred milliseconds. A process that misbehaves (no answer within the
//! time limit, exited) is killed and started again on the next text.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStderr, ChildStdin, Command};
use tokio::sync::Mutex;

use super::error::SpeechError;

/// Longest one line may take to speak.
const TIMEOUT: Duration = Duration::from_secs(20);
/// Longest a voice may take to load.
const LOAD_TIMEOUT: Duration = Duration::from_secs(60);

/// Where a voice package's model is, asked of Python once.
pub(super) async fn model_of(package: &str) -> Option<PathBuf> {
    let script = format!("import {package}; print({package}.model_path())");
    let out = tokio::time::timeout(
        Duration::from_secs(30),
        Command::new(python())
            .args(["-c", &script])
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .output(),
    )
    .await
    .ok()?
    .ok()?;
    let path = PathBuf::from(String::from_utf8(out.stdout).ok()?.trim());
    (out.status.success() && path.is_file() && piper_installed().await).then_some(path)
}

/// The Python that runs Piper and the transcriber (`DIALTONE_SPEECH_PYTHON`, else
/// `python3`).
pub(super) fn python() -> String {
    std::env::var("DIALTONE_SPEECH_PYTHON").unwrap_or_else(|_| "python3".to_owned())
}

async fn piper_installed() -> bool {
    Command::new(python())
        .args(["-c", "import piper"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .await
        .is_ok_and(|s| s.success())
}

/// A running Piper process.
struct Running {
    child: Child,
    stdin: ChildStdin,
    stderr: Lines<BufReader<ChildStderr>>,
}

/// One voice's process, started on first use.
pub(super) struct Piper {
    model: PathBuf,
    dir: tempfile::TempDir,
    running: Mutex<Option<Running>>,
}

impl Piper {
    /// A voice whose model is `model` (not started yet).
    pub(super) fn new(model: PathBuf) -> std::io::Result<Self> {
        Ok(Self {
            model,
            dir: tempfile::tempdir()?,
            running: Mutex::new(None),
        })
    }

    fn start(&self) -> Result<Running, SpeechError> {
        let mut child = Command::new(python())
            .args(["-m", "piper", "-m"])
            .arg(&self.model)
            .arg("--output-dir")
            .arg(self.dir.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| SpeechError::Failed(format!("piper: {e}")))?;
        let (Some(stdin), Some(stderr)) = (child.stdin.take(), child.stderr.take()) else {
            return Err(SpeechError::Failed("piper: no pipes".into()));
        };
        Ok(Running {
            child,
            stdin,
            stderr: BufReader::new(stderr).lines(),
        })
    }

    /// Speaks one line (newlines become spaces): its WAV file's bytes.
    pub(super) async fn synthesize(&self, text: &str) -> Result<Vec<u8>, SpeechError> {
        let line: String = text
            .chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect();
        let mut running = self.running.lock().await;
        let first = running.is_none();
        if first {
            *running = Some(self.start()?);
        }
        let limit = if first { LOAD_TIMEOUT } else { TIMEOUT };
        let result = match running.as_mut() {
            Some(r) => tokio::time::timeout(limit, speak(r, &line)).await,
            None => return Err(SpeechError::Failed("piper: not started".into())),
        };
        match result {
            Ok(Ok(path)) => {
                let wav = tokio::fs::read(&path)
                    .await
                    .map_err(|e| SpeechError::Failed(format!("piper: {e}")));
                let _ = tokio::fs::remove_file(&path).await;
                wav
            }
            Ok(Err(e)) => {
                self.stop(&mut running).await;
                Err(e)
            }
            Err(_) => {
                self.stop(&mut running).await;
                Err(SpeechError::Failed("piper: timed out".into()))
            }
        }
    }

    async fn stop(&self, running: &mut Option<Running>) {
        if let Some(mut r) = running.take() {
            let _ = r.child.kill().await;
        }
    }
}

/// Writes `line` and waits for the file it becomes.
async fn speak(r: &mut Running, line: &str) -> Result<PathBuf, SpeechError> {
    let io = |e: std::io::Error| SpeechError::Failed(format!("piper: {e}"));
    r.stdin.write_all(line.as_bytes()).await.map_err(io)?;
    r.stdin.write_all(b"\n").await.map_err(io)?;
    r.stdin.flush().await.map_err(io)?;
    while let Some(log) = r.stderr.next_line().await.map_err(io)? {
        if let Some(path) = log.split_once("Wrote ").map(|(_, p)| p.trim()) {
            return Ok(Path::new(path).to_path_buf());
        }
    }
    Err(SpeechError::Failed("piper: exited".into()))
}
