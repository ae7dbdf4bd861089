//! SQLite checkpoints, mostly off the writer thread.
//!
//! A checkpoint copies the pages the WAL holds back into the database file and fsyncs it;
//! once every frame is copied, the next write transaction starts the WAL over from its
//! beginning. SQLite's automatic checkpoint does all of it on the connection that committed,
//! here the one writer, which every request waits on: under an SMS load it was 7% of the
//! writer's CPU time, and its database fsync (1.6 ms at p50, 31 a second) held the writer
//! about as long again.
//!
//! Here a checkpointer thread with its own connection copies the frames as they come
//! (SQLite's PASSIVE mode: it runs beside the writer and takes no lock the writer needs). It
//! cannot make the WAL start over: the writer keeps appending while it copies, so it never
//! finds the WAL fully copied. The writer does that last step itself, at a larger size:
//! its checkpoint finds most frames already copied, copies the rest, fsyncs once, and its
//! next transaction starts the WAL over. Durability is SQLite's own either way: commits
//! still fsync the WAL, and a checkpoint is safe to interrupt at any point.

use std::cell::Cell;
use std::ffi::c_int;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crossbeam_channel::{Receiver, Sender, TrySendError};
use rusqlite::Connection;
use rusqlite::hooks::Wal;

/// WAL frames (pages) committed between two wake-ups of the checkpointer thread.
const BACKGROUND_EVERY: i32 = 500;
/// WAL frames at which the writer checkpoints itself, so the WAL starts over (SQLite's own
/// automatic checkpoint runs at 1,000).
const WRITER_AT: i32 = 4_000;
/// When the WAL could not start over after the writer's checkpoint (a reader still used
/// it), frames committed before the writer tries again.
const WRITER_RETRY_AFTER: i32 = 1_000;

thread_local! {
    /// Frames in the WAL after the last commit made on this thread (the writer thread; the
    /// WAL hook runs on the thread that commits).
    static WAL_FRAMES: Cell<i32> = const { Cell::new(0) };
}

fn note_frames(_wal: &Wal, frames: c_int) -> rusqlite::Result<()> {
    WAL_FRAMES.set(frames);
    Ok(())
}

/// Counts of checkpoints run, for tests and diagnostics.
#[derive(Debug, Default)]
pub(crate) struct CheckpointCounts {
    /// Checkpoints the checkpointer thread ran.
    pub(crate) background: AtomicU64,
    /// Checkpoints the writer ran.
    pub(crate) writer: AtomicU64,
}

/// The writer's side: decides after each commit whether to wake the checkpointer or to
/// checkpoint itself.
pub(crate) struct Checkpoints {
    wake: Sender<()>,
    next_background: i32,
    writer_at: i32,
    last_frames: i32,
    counts: Arc<CheckpointCounts>,
}

impl Checkpoints {
    /// Takes over the checkpoints of `writer` (its automatic checkpoint is replaced by the
    /// WAL hook) and starts the checkpointer thread on a connection of its own.
    pub(crate) fn start(
        writer: &Connection,
        checkpointer: Connection,
        counts: Arc<CheckpointCounts>,
    ) -> std::io::Result<Self> {
        // Registering a WAL hook turns SQLite's automatic checkpoint off.
        writer.wal_hook(Some(note_frames));
        let (wake, woken) = crossbeam_channel::bounded(1);
        let thread_counts = counts.clone();
        std::thread::Builder::new()
            .name("sqlite-checkpointer".into())
            .spawn(move || checkpointer_loop(&checkpointer, &woken, &thread_counts))?;
        Ok(Self {
            wake,
            next_background: BACKGROUND_EVERY,
            writer_at: WRITER_AT,
            last_frames: 0,
            counts,
        })
    }

    /// Runs on the writer thread after each transaction.
    pub(crate) fn after_commit(&mut self, writer: &Connection) {
        let frames = WAL_FRAMES.get();
        if frames < self.last_frames {
            // The WAL started over.
            self.next_background = BACKGROUND_EVERY;
            self.writer_at = WRITER_AT;
        }
        self.last_frames = frames;
        if frames >= self.writer_at {
            match checkpoint(writer) {
                // The checkpointer thread holds the checkpoint lock for a few milliseconds:
                // again after the next commit.
                Ok(Ran::Busy) => {}
                Ok(Ran::Done) => {
                    self.counts.writer.fetch_add(1, Ordering::Relaxed);
                    self.writer_at = frames + WRITER_RETRY_AFTER;
                }
                Err(e) => {
                    tracing::warn!(error = %e, "checkpoint on the writer failed");
                    self.writer_at = frames + WRITER_RETRY_AFTER;
                }
            }
        } else if frames >= self.next_background {
            match self.wake.try_send(()) {
                // Full: the checkpointer has a wake-up waiting already.
                Ok(()) | Err(TrySendError::Full(())) => {}
                Err(TrySendError::Disconnected(())) => {
                    tracing::warn!("the checkpointer thread is gone");
                }
            }
            self.next_background = frames + BACKGROUND_EVERY;
        }
    }
}

/// What a checkpoint did.
enum Ran {
    /// Copied what the readers allowed (every frame, unless a reader still used some).
    Done,
    /// Did nothing: another connection was checkpointing.
    Busy,
}

/// A PASSIVE checkpoint: copies what it can without waiting for any lock.
fn checkpoint(conn: &Connection) -> rusqlite::Result<Ran> {
    // The row is (busy, frames in the WAL, frames copied).
    let busy: i64 = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| r.get(0))?;
    Ok(if busy == 0 { Ran::Done } else { Ran::Busy })
}

fn checkpointer_loop(conn: &Connection, woken: &Receiver<()>, counts: &CheckpointCounts) {
    // Ends when the writer thread (the only sender) ends.
    while woken.recv().is_ok() {
        match checkpoint(conn) {
            Ok(Ran::Done) => {
                counts.background.fetch_add(1, Ordering::Relaxed);
            }
            // The writer was checkpointing; the next wake-up comes 500 frames later.
            Ok(Ran::Busy) => {}
            Err(e) => tracing::warn!(error = %e, "background checkpoint failed"),
        }
    }
}
