//! The SMS worker: hands `created` SMS to the carrier and applies the status moves that are
//! due, each with its history line and its event, a batch to a transaction and its writes
//! together ([`Moves`]).
//!
//! The simulated network answers without I/O, inside the transaction that takes the SMS,
//! and its statuses follow a known timetable, applied here when due. An SMS for a real
//! network (SMPP) is leased and handed to [`submission`](super::submission), which submits
//! it part by part outside the transaction: it becomes `pending` when first handed over,
//! `sent` when the SMSC took every part, and its receipts move it on (`receipts`).

use dialtone_carrier::Carrier;
use dialtone_domain::sms::SmsStatus;
use dialtone_store::sms as store;

use super::moves::{Moves, apply, apply_planned, outbound, settle_now, simulated_carrier};
use crate::error::AppError;
use crate::state::AppState;

/// Handles the SMS work that is due; returns how many SMS moved or were handed to a network.
/// Submissions to real networks run on after it returns, each on its own
/// ([`submission`](super::submission)): a slow SMSC never holds up this loop.
pub(crate) async fn tick(state: &AppState) -> anyhow::Result<usize> {
    let now = state.clock.now();
    let batch =
        usize::try_from(state.sms_pacing.batch(state.store.writes_in_flight(), now)).unwrap_or(0);
    // The SMS this node knows to be due, then (now and then, or when those gave nothing)
    // the walk of the queue for the rest, every account's in turn (see `due_hints`).
    let hinted = state
        .sms_hints
        .take_due(now, state.sms_hints.hint_limit(now, batch));
    let walk = state.sms_hints.walk_now(now, hinted.len());
    let walk_after = state.sms_hints.walk_after();
    let st = state.clone();
    // Answered at its commit (the next tick then runs while the disk syncs this one); the
    // submissions to real networks wait for the sync below.
    let (((to_submit, moved, scheduled, received), oldest_due, walk_ended), unsynced) = state
        .store
        .background()
        .write_unsynced(move |c| {
            let mut moves = Moves::default();
            let mut submit = Vec::new();
            let mut moved = 0;
            let mut due = store::due_among(c, now, &hinted)?;
            let room = batch.saturating_sub(due.len());
            let mut walk_ended = None;
            if walk && room > 0 {
                // The walk sees this transaction's own claims as free: skip them.
                let claimed: std::collections::HashSet<i64> = due.iter().map(|s| s.id).collect();
                let (found, last_account) = store::due(c, now, room, walk_after, &claimed)?;
                due.extend(found);
                walk_ended = Some(last_account);
            }
            let oldest_due = due.iter().filter_map(|s| s.next_at).min();
            // Who owns the numbers the simulated network delivers to: read at once.
            let recipients = due
                .iter()
                .filter(|s| simulated_carrier(&st, s).is_some())
                .map(|s| s.to.clone())
                .collect();
            moves.read_owners(c, recipients)?;
            moves
                .events
                .read_accounts(c, due.iter().map(|s| s.account_id))?;
            for sms in due {
                moved += 1;
                let sms = if sms.plan_sent_at.is_some() {
                    apply_planned(c, &st, &mut moves, sms)?
                } else {
                    sms
                };
                let current = SmsStatus::parse(&sms.status).unwrap_or(SmsStatus::Created);
                if current.is_final() {
                    moves.reschedule(c, &sms, None)?;
                    continue;
                }
                if let Some(sim) = simulated_carrier(&st, &sms) {
                    if current == SmsStatus::Created {
                        let outcome = sim.submit_now(&outbound(&sms));
                        if let Some(outcome) = outcome {
                            settle_now(c, &st, &mut moves, &sms, &outcome, now)?;
                            continue;
                        }
                    }
                    match sim.next_status(&sms.to, current) {
                        Some((next, _)) if current.may_become(next) => {
                            apply(c, &st, &mut moves, &sms, next, "", now)?;
                        }
                        _ => moves.reschedule(c, &sms, None)?,
                    }
                    continue;
                }
                match current {
                    SmsStatus::Created | SmsStatus::Pending => {
                        if let Some(s) = super::submission::lease(c, &st, &mut moves, sms, now)? {
                            submit.push(s);
                        }
                    }
                    // A real network's receipts move it on from here.
                    _ => moves.reschedule(c, &sms, None)?,
                }
            }
            moves.flush(c)?;
            let claimed = (submit, moved, moves.take_scheduled(), moves.received);
            Ok::<_, AppError>((claimed, oldest_due, walk_ended))
        })
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    if let Some(last_account) = walk_ended {
        state.sms_hints.walk_ended(last_account);
    }
    // Work running late takes more of the writer at the next tick (`pacing`).
    state.sms_pacing.note_claimed(oldest_due, now);
    for (id, account, at) in scheduled {
        state.sms_hints.add(id, account, at);
    }
    if received {
        // An inbound SMS may start a run, and the other workers look for it.
        state.wake.notify_one();
    }
    // A lease lost with an unsynced commit would be taken again after a restart: nothing
    // is handed to a network before the commit that leased it is on disk.
    if !to_submit.is_empty() {
        unsynced.synced().await?;
    }
    for submission in to_submit {
        super::submission::spawn(state, submission);
    }
    Ok(moved)
}
