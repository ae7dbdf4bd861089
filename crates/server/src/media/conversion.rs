//! The conversion worker: claims due conversion jobs with a lease (like webhook deliveries),
//! moves each file to `processing`, converts on the blocking pool, and records `ready` or
//! `error`, each move emitting `media.library.status_update` in the same transaction.
//!
//! A node that dies mid-conversion leaves its jobs leased; when the lease runs out another
//! tick claims them again (the file is already `processing`, so no second event). Each claim
//! counts an attempt before the conversion starts: a job claimed [`MAX_ATTEMPTS`] times
//! without finishing ends in `error`. Conversions run in a child process with a memory and
//! CPU budget (`converter`), so content that kills its decoder ends in `error` at once and
//! never takes this process down.

use dialtone_media::DeclaredType;
use dialtone_store::DbError;
use dialtone_store::audio_files::{self, Claimed, Outcome};

use super::emit_status;
use crate::state::AppState;

/// A claimed job stays ours this long: far more than converting the largest file takes.
pub const LEASE_MS: i64 = 120_000;
/// Jobs converted per tick (they run in parallel on the blocking pool).
const BATCH: i64 = 2;
/// Claims after which a job that never finished is given up.
pub const MAX_ATTEMPTS: i64 = 3;

/// Converts the due jobs once; returns how many were handled.
pub async fn tick(state: &AppState) -> anyhow::Result<usize> {
    let now = state.clock.now();
    // Most ticks find nothing: ask a reader before taking the writer.
    if !state
        .store
        .read(move |c| audio_files::any_due(c, now))
        .await?
    {
        return Ok(0);
    }
    let claimed = state
        .store
        .write(move |c| {
            let claimed = audio_files::claim_conversions(c, now, LEASE_MS, BATCH)?;
            for job in &claimed {
                if let Some(file) =
                    audio_files::start_processing(c, job.audio_file_id, job.revision, now)?
                {
                    emit_status(c, &file, now)?;
                }
            }
            Ok::<_, DbError>(claimed)
        })
        .await?;
    if claimed.is_empty() {
        return Ok(0);
    }
    let count = claimed.len();
    let limits = super::limits(state);
    let budget = super::budget(state);
    let mut tasks = tokio::task::JoinSet::new();
    for job in claimed {
        let budget = budget.clone();
        tasks.spawn(async move {
            let outcome = if job.attempts > MAX_ATTEMPTS {
                Outcome::Failed(format!(
                    "undecodable: the conversion did not complete after {MAX_ATTEMPTS} attempts"
                ))
            } else {
                run(&job, &budget, &limits).await
            };
            (job, outcome)
        });
    }
    let mut finished = Vec::with_capacity(count);
    while let Some(done) = tasks.join_next().await {
        match done {
            Ok(result) => finished.push(result),
            // A panic escaped the converter: the lease brings the job back later.
            Err(e) => tracing::error!(error = %e, "audio conversion task failed"),
        }
    }
    let now = state.clock.now();
    state
        .store
        .write(move |c| {
            for (job, outcome) in &finished {
                if let Some(file) = audio_files::finish_conversion(c, job, outcome, now)? {
                    emit_status(c, &file, now)?;
                }
            }
            Ok::<_, DbError>(())
        })
        .await?;
    Ok(count)
}

/// Converts one job's content in a child process within the budget: whatever the content
/// does to the decoder, this process lives on.
async fn run(
    job: &Claimed,
    budget: &super::converter::Budget,
    limits: &dialtone_media::Limits,
) -> Outcome {
    let Some(declared) = DeclaredType::from_content_type(&job.content_type) else {
        return Outcome::Failed(format!(
            "not audio: unsupported content type {:?}",
            job.content_type
        ));
    };
    let converted = super::converter::convert(budget, job.original.clone(), declared, limits).await;
    match converted {
        Ok(done) => Outcome::Ready {
            duration_ms: i64::try_from(done.duration_ms).unwrap_or(i64::MAX),
            wav: done.wav,
        },
        Err(e) => Outcome::Failed(e.to_string()),
    }
}
