//! The runs worker: starts runs whose creator died before their first step (and the
//! `inbound-sms` runs stored with their SMS), and answers the waits whose time is up.

use dialtone_store::runs;

use super::driver::{Trigger, drive};
use crate::state::AppState;

/// Most runs handled per tick.
const BATCH: i64 = 200;
/// How long a claimed run is left to its node before another node takes it.
const LEASE_MS: i64 = 30_000;

/// Handles the due runs once; returns how many.
pub async fn tick(state: &AppState) -> anyhow::Result<usize> {
    let now = state.clock.now();
    let due = state
        .store
        .write_repeatable(move |c| runs::claim_due(c, now, LEASE_MS, BATCH))
        .await?;
    let n = due.len();
    for run in due {
        let started = run
            .state
            .as_deref()
            .is_some_and(|s| s.starts_with("{\"running\""));
        let trigger = if started {
            Trigger::Poll
        } else {
            Trigger::Start
        };
        if let Err(e) = drive(state.clone(), run.id, vec![trigger]).await {
            tracing::warn!(run = %run.sid, error = %e, "a run could not advance");
        }
    }
    Ok(n)
}
