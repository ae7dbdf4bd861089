//! The transcription worker: claims recordings whose transcription is due (a lease, like
//! conversions), transcribes [`AT_ONCE`] at a time on this node (a transcriber takes a core
//! and a few hundred megabytes), one per account, the accounts taking turns (the one served
//! least recently first: one account's backlog never holds the others' back), and records
//! the transcript or why there is none with its `media.recording.status_update`. A `startRecording` whose transcript was asked for gets
//! its `ready` event then, with the text.
//!
//! A claim counts an attempt before the transcriber starts: a recording claimed
//! [`MAX_ATTEMPTS`] times without an answer (its node died each time, or the transcriber
//! kept running out of time) ends `failed`.

use dialtone_actions::Event;
use dialtone_domain::call::TranscriptStatus;
use dialtone_store::DbError;
use dialtone_store::recordings::{self, TranscriptJob};

use super::legs::emit;
use super::recordings::{legacy_view, view};
use crate::scenarios::driver::drive;
use crate::scenarios::stored::Trigger;
use crate::speech::SpeechError;
use crate::state::AppState;

/// A claimed transcription stays ours this long: far more than the longest takes.
pub(crate) const LEASE_MS: i64 = 30 * 60 * 1000;
/// Transcriptions at once on a node.
const AT_ONCE: usize = 2;
/// Claims after which a transcription that never finished is given up.
pub(crate) const MAX_ATTEMPTS: i64 = 3;

/// Claims a due transcription when this node has room and makes it on a task of its own;
/// returns how many were started.
pub(crate) async fn tick(state: &AppState) -> anyhow::Result<usize> {
    let room = AT_ONCE.saturating_sub(state.transcriptions.running());
    if room == 0 {
        return Ok(0);
    }
    let now = state.clock.now();
    if !state
        .store
        .read(move |c| recordings::transcripts_due(c, now))
        .await?
    {
        return Ok(0);
    }
    let mut accounts = state
        .store
        .read(move |c| recordings::transcript_accounts(c, now))
        .await?;
    state.transcriptions.in_turn(&mut accounts);
    let mut plan = state.transcriptions.plan();
    let mut chosen: Vec<i64> = accounts.into_iter().filter(|a| plan.take(*a)).collect();
    chosen.truncate(room);
    let claimed = state
        .store
        .background()
        .write(move |c| {
            let mut claimed = Vec::with_capacity(chosen.len());
            for &account in &chosen {
                claimed.extend(recordings::claim_transcript(c, now, LEASE_MS, account)?);
            }
            Ok::<_, DbError>(claimed)
        })
        .await?;
    let count = claimed.len();
    for job in claimed {
        state.transcriptions.start(job.account_id);
        let state = state.clone();
        tokio::spawn(async move {
            let account = job.account_id;
            if let Err(e) = transcribe(&state, job).await {
                // The lease brings the transcription back.
                tracing::error!(error = %format!("{e:#}"), "a transcription could not be recorded");
            }
            state.transcriptions.done(account);
        });
    }
    Ok(count)
}

/// Transcribes one recording, records the outcome, and gives a waiting run its `ready`.
async fn transcribe(state: &AppState, job: TranscriptJob) -> anyhow::Result<()> {
    let outcome: Result<String, (TranscriptStatus, String)> = if job.attempts > MAX_ATTEMPTS {
        Err((
            TranscriptStatus::Failed,
            format!("the transcription did not complete after {MAX_ATTEMPTS} attempts"),
        ))
    } else {
        let started = std::time::Instant::now();
        match crate::speech::transcribe::transcribe(&job.audio, &job.language).await {
            Ok(text) => {
                let audio_ms = dialtone_media::wav_info(&job.audio).map_or(0, |(_, _, ms)| ms);
                state.speech.transcribed.add(started.elapsed(), audio_ms);
                Ok(text)
            }
            Err(e @ SpeechError::NoModel(_)) => Err((TranscriptStatus::Unsupported, e.to_string())),
            Err(e) => Err((TranscriptStatus::Failed, e.to_string())),
        }
    };
    let (id, now) = (job.id, state.clock.now());
    let finished = state
        .store
        .background()
        .write(move |c| {
            let outcome = match &outcome {
                Ok(text) => Ok(text.as_str()),
                Err((status, error)) => Err((*status, error.as_str())),
            };
            let Some(done) = recordings::finish_transcript(c, id, outcome, now)? else {
                return Ok(None);
            };
            let legacy = legacy_view(&done.recording);
            emit(
                c,
                done.account_id,
                "media.recording.status_update",
                &legacy,
                now,
            )?;
            Ok::<_, DbError>(Some(done))
        })
        .await?;
    state.wake.notify_one();
    if let Some(done) = finished
        && let Some((run, fiber)) = done.waiter
    {
        let ready = Event::ActionEvent {
            fiber,
            name: "ready".into(),
            value: view(&done.recording),
        };
        drive(state.clone(), run, vec![Trigger::Event(ready)]).await?;
    }
    Ok(())
}
