//! The conversion worker: claims due conversion jobs with a lease (like webhook deliveries),
//! moves each file to `processing`, converts on the blocking pool (or, for a text to speak,
//! speaks it), and records `ready` or `error`, each move emitting
//! `media.library.status_update` in the same transaction.
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
/// Conversions at once on a node (each a child process on a core).
const AT_ONCE: usize = 2;
/// Conversions of one account at once: another account's file never waits behind them.
pub(crate) const PER_ACCOUNT: usize = 1;
/// Claims after which a job that never finished is given up.
pub const MAX_ATTEMPTS: i64 = 3;

/// Claims the due jobs this node has room for (one per account at a time) and converts each
/// on a task of its own, recorded when it ends; returns how many were started.
pub(crate) async fn tick(state: &AppState) -> anyhow::Result<usize> {
    let room = AT_ONCE.saturating_sub(state.conversions.running());
    if room == 0 {
        return Ok(0);
    }
    let now = state.clock.now();
    // Most ticks find nothing: ask a reader before taking the writer.
    if !state
        .store
        .read(move |c| audio_files::any_due(c, now))
        .await?
    {
        return Ok(0);
    }
    let full = state.conversions.full();
    let plan = state.conversions.plan();
    let public_url = state.config.public_url();
    let claimed = state
        .store
        .background()
        .write(move |c| {
            let mut plan = plan;
            let claimed = audio_files::claim_conversions(
                c,
                now,
                LEASE_MS,
                room as i64,
                &full,
                &mut |account| plan.take(account),
            )?;
            for job in &claimed {
                if let Some(file) =
                    audio_files::start_processing(c, job.audio_file_id, job.revision, now)?
                {
                    emit_status(c, &public_url, &file, now)?;
                }
            }
            Ok::<_, DbError>(claimed)
        })
        .await?;
    let count = claimed.len();
    let limits = super::limits(state);
    let budget = super::budget(state);
    for job in claimed {
        state.conversions.start(job.account_id);
        let (state, budget) = (state.clone(), budget.clone());
        tokio::spawn(async move {
            let account = job.account_id;
            let outcome = if job.attempts > MAX_ATTEMPTS {
                Outcome::Failed(format!(
                    "undecodable: the conversion did not complete after {MAX_ATTEMPTS} attempts"
                ))
            } else if job.content_type == audio_files::TTS_CONTENT_TYPE {
                speak(&state, &job).await
            } else {
                run(&job, &budget, &limits).await
            };
            let now = state.clock.now();
            let public_url = state.config.public_url();
            let recorded = state
                .store
                .background()
                .write(move |c| {
                    if let Some(file) = audio_files::finish_conversion(c, &job, &outcome, now)? {
                        emit_status(c, &public_url, &file, now)?;
                    }
                    Ok::<_, DbError>(())
                })
                .await;
            if let Err(e) = recorded {
                // The lease brings the job back.
                tracing::error!(error = %format!("{e:#}"), "an audio conversion could not be recorded");
            }
            state.conversions.done(account);
        });
    }
    Ok(count)
}

/// Speaks a text-to-speech file's text with its voice (speech bounds its engines' time and
/// output): its WAV.
async fn speak(state: &AppState, job: &Claimed) -> Outcome {
    let text = String::from_utf8_lossy(&job.original);
    let voice = match state
        .speech
        .voice(job.voice.as_deref().unwrap_or_default())
        .await
    {
        Ok(voice) => voice,
        Err(e) => return Outcome::Failed(format!("undecodable: {e}")),
    };
    match state.speech.speak_with(&text, voice).await {
        Ok(dialtone_sip::Spoken { pcm, .. }) => Outcome::Ready {
            duration_ms: i64::try_from(pcm.len() / 8).unwrap_or(i64::MAX),
            wav: dialtone_media::pcm_wav(&pcm),
        },
        Err(e) => Outcome::Failed(format!("undecodable: {e}")),
    }
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
