//! What a network reports of a call ([`CallEvent`]) reaching the call's record and its
//! runs: digits and audio feed the waits, a prompt played lets its fiber go on, a hangup
//! ends the call and its runs' call work.
//!
//! A report is stored first ([`store`]), then followed ([`follow`]): the sandbox (the
//! simulated network's far end) waits for both, so its answer shows what the scenario did;
//! a real network ([`report_from_network`]) waits only for the store, so that the next
//! report of its call is never held up by what a scenario does meanwhile.

use dialtone_carrier::voice::CallEvent;
use dialtone_domain::call::HangupSource;
use dialtone_store::calls::{self, Call};
use dialtone_store::runs;
use serde_json::json;

use super::driver::drive;
use super::stored::Trigger;
use crate::state::AppState;
use crate::voice::legs::{self, timeline};

/// What a stored report leads to.
#[derive(Debug)]
pub(crate) enum Follow {
    /// Nothing more.
    Nothing,
    /// The call's runs check their waits.
    Poll(i64),
    /// A fiber's prompt was played.
    Played {
        /// The run.
        run: i64,
        /// Its fiber.
        fiber: u32,
    },
    /// The call ended.
    Hangup {
        /// The call.
        call: i64,
        /// Its Q.850 cause.
        cause: i64,
        /// Who ended it.
        source: HangupSource,
    },
}

/// Stores what a network reported of `call`.
pub(crate) async fn store(
    state: &AppState,
    call: &Call,
    event: CallEvent,
) -> anyhow::Result<Follow> {
    let (id, now) = (call.id, state.clock.now());
    Ok(match event {
        CallEvent::Answered => {
            let call = call.clone();
            state
                .store
                .write(move |c| legs::answer(c, &call, &json!({}), now))
                .await?;
            Follow::Poll(id)
        }
        CallEvent::Digits(digits) => {
            state
                .store
                .write(move |c| {
                    calls::push_dtmf(c, id, &digits)?;
                    timeline(c, id, "dtmf", &json!({"digits": digits}), now)
                })
                .await?;
            Follow::Poll(id)
        }
        CallEvent::Audio(wav) => {
            let duration = dialtone_media::wav_info(&wav).map_or(0, |(_, _, ms)| ms);
            state
                .store
                .write(move |c| {
                    calls::set_audio(c, id, &wav)?;
                    timeline(c, id, "audio", &json!({"duration": duration}), now)
                })
                .await?;
            Follow::Poll(id)
        }
        CallEvent::CallRecorded(wav) => {
            // Read by the call recording when the hangup that follows is written.
            state
                .store
                .write(move |c| calls::set_call_audio(c, id, Some(&wav)))
                .await?;
            Follow::Nothing
        }
        CallEvent::Played(tag) => Follow::Played {
            run: tag.run,
            fiber: tag.fiber,
        },
        CallEvent::Hangup { cause, source } => Follow::Hangup {
            call: id,
            cause,
            source,
        },
    })
}

/// Does what a stored report leads to.
pub(crate) async fn follow(state: &AppState, follow: Follow) -> anyhow::Result<()> {
    match follow {
        Follow::Nothing => Ok(()),
        Follow::Poll(call) => poll_runs(state, call).await,
        Follow::Played { run, fiber } => {
            drive(state.clone(), run, vec![Trigger::Played { fiber }]).await
        }
        Follow::Hangup {
            call,
            cause,
            source,
        } => hang_up_and_drive(state, call, cause, source).await,
    }
}

/// Applies what a network reported of `call` and drives the runs it concerns.
pub(crate) async fn report(state: &AppState, call: &Call, event: CallEvent) -> anyhow::Result<()> {
    let next = store(state, call, event).await?;
    follow(state, next).await
}

/// What a real network reported of the call it carries under `callid`: stored before this
/// returns, followed on a task of its own.
pub(crate) async fn report_from_network(state: &AppState, callid: &str, event: CallEvent) {
    let id = callid.to_owned();
    let call = match state
        .store
        .read(move |c| calls::by_callid_any(c, &id))
        .await
    {
        Ok(Some(call)) => call,
        Ok(None) => {
            tracing::warn!(
                callid,
                "a network reported on a call the platform does not know"
            );
            return;
        }
        Err(e) => {
            tracing::error!(callid, error = %format!("{e:#}"), "a network's report was not read");
            return;
        }
    };
    match store(state, &call, event).await {
        Ok(next) => {
            let state = state.clone();
            let callid = callid.to_owned();
            tokio::spawn(async move {
                if let Err(e) = follow(&state, next).await {
                    tracing::error!(callid, error = %format!("{e:#}"), "a call's report was not followed");
                }
            });
        }
        Err(e) => {
            tracing::error!(callid, error = %format!("{e:#}"), "a network's report was not stored");
        }
    }
}

/// Hangs up a live call and drives its runs to the end of the call.
pub(crate) async fn hang_up_and_drive(
    state: &AppState,
    call_id: i64,
    cause: i64,
    source: HangupSource,
) -> anyhow::Result<()> {
    for (run, triggers) in super::hangup::hang_up(state, call_id, cause, source).await? {
        drive(state.clone(), run, triggers).await?;
    }
    Ok(())
}

/// Feeds the runs of a call after the caller sent digits or audio.
pub(crate) async fn poll_runs(state: &AppState, call_id: i64) -> anyhow::Result<()> {
    let live = state
        .store
        .read(move |c| runs::live_for_call(c, call_id))
        .await?;
    for run in live {
        drive(state.clone(), run.id, vec![Trigger::Poll]).await?;
    }
    Ok(())
}
