//! The runs worker: starts runs whose creator died before their first step (and the
//! `inbound-sms` runs stored with their SMS), and answers the waits whose time is up.

use dialtone_store::runs;

use super::driver::drive;
use super::stored::Trigger;
use crate::state::AppState;

/// Most runs handled per tick.
const BATCH: i64 = 200;
/// How long a claimed run is left to its node before another node takes it.
const LEASE_MS: i64 = 30_000;

/// Runs of one account driven at once by this worker.
pub(crate) const PER_ACCOUNT: usize = 8;

/// Claims the due runs (at most [`PER_ACCOUNT`] of an account at once) and drives each on a
/// task of its own: a run waiting on a slow `fetch` holds up only itself. Returns how many
/// were started.
pub(crate) async fn tick(state: &AppState) -> anyhow::Result<usize> {
    let now = state.clock.now();
    let full = state.runs.full();
    let plan = state.runs.plan();
    let due = state
        .store
        .background()
        .write_repeatable(move |c| {
            let mut plan = plan.clone();
            runs::claim_due(c, now, LEASE_MS, BATCH, &full, &mut |r| {
                plan.take(r.account_id)
            })
        })
        .await?;
    let n = due.len();
    for run in due {
        state.runs.start(run.account_id);
        let state = state.clone();
        tokio::spawn(async move {
            // Due: a run not started yet starts, a started one has its waits checked.
            if let Err(e) = drive(state.clone(), run.id, vec![Trigger::Due]).await {
                tracing::warn!(run = %run.sid, error = %format!("{e:#}"), "a run could not advance");
            }
            state.runs.done(run.account_id);
        });
    }
    Ok(n)
}
