//! SMS status moves: each move of a batch queued with its history line and its event, and
//! written together ([`Moves::flush`]); what a network's answer to a submission does to an
//! SMS; delivery to a number of this platform reaching its owner.

use std::collections::HashMap;

use dialtone_carrier::{Accepted, Carrier, OutboundSms, Rejected, Simulated};
use dialtone_domain::Timestamp;
use dialtone_domain::sms::{Encoding, SmsStatus, layout};
use dialtone_store::accounts;
use dialtone_store::numbers::owned;
use dialtone_store::sms::{self as store, Sms, StateWrite, StatusChange};
use dialtone_store::{Conn, billing};

use super::events::StatusEvents;
use super::inbound::receive;
use crate::error::AppError;
use crate::networks::SIMULATED;
use crate::state::AppState;

/// Wait before retrying a submission the carrier refused for now.
pub(crate) const RETRY_MS: i64 = 10_000;

/// The status moves of one transaction, written together by [`Moves::flush`] (a few
/// multi-row statements for a batch, instead of two or three statements per move), with
/// their events.
#[derive(Default)]
pub(crate) struct Moves {
    /// One new state per SMS (an SMS moved twice in the batch has its last one), by id.
    states: Vec<StateWrite>,
    index: HashMap<i64, usize>,
    /// The moves' events, and what they need of the accounts.
    pub(crate) events: StatusEvents,
    /// The SMS written with a next due time, their accounts, and that time: the worker's
    /// hints once the transaction commits (see `due_hints`).
    scheduled: Vec<(i64, i64, Timestamp)>,
    /// The owners of the numbers SMS of this transaction go to, read together before the
    /// moves ([`Moves::read_owners`]): a delivery to a number of this platform reaches its
    /// owner. A recipient not here is read when its SMS is delivered.
    owners: HashMap<String, Option<i64>>,
    /// Whether a delivery reached an owner here as an inbound SMS (which may start a run:
    /// the other workers are woken once the transaction commits).
    pub(crate) received: bool,
}

impl Moves {
    /// Queues the new state of `moved` and its history line.
    fn queue_state(&mut self, moved: &Sms, line: String) {
        let state = StateWrite {
            id: moved.id,
            account_id: moved.account_id,
            status: moved.status.clone(),
            status_error: moved.status_error.clone(),
            next_at: moved.next_at,
            updated: moved.updated,
            sent_at: moved.sent_at,
            delivered_at: moved.delivered_at,
            history_lines: line,
            message_ids: None,
        };
        match self.index.get(&moved.id) {
            Some(&i) => {
                let mut lines = std::mem::take(&mut self.states[i].history_lines);
                lines.push_str(&state.history_lines);
                let message_ids = self.states[i].message_ids.take();
                self.states[i] = StateWrite {
                    history_lines: lines,
                    message_ids,
                    ..state
                };
            }
            None => {
                self.index.insert(moved.id, self.states.len());
                self.states.push(state);
            }
        }
    }

    /// Records the network's ids of the parts of an SMS it took, with its queued new state
    /// when it has one (it has after a move), else at once.
    pub(crate) fn set_message_ids(
        &mut self,
        c: &mut dyn Conn,
        sms_id: i64,
        ids: String,
    ) -> Result<(), AppError> {
        match self.index.get(&sms_id) {
            Some(&i) => self.states[i].message_ids = Some(ids),
            None => {
                store::set_message_ids(c, sms_id, &ids)?;
            }
        }
        Ok(())
    }

    /// Sets when the worker next acts on an SMS (a lease, a retry, never): in its queued new
    /// state when it has one (which would otherwise undo this), else at once.
    pub(crate) fn reschedule(
        &mut self,
        c: &mut dyn Conn,
        sms: &Sms,
        next_at: Option<Timestamp>,
    ) -> Result<(), AppError> {
        match self.index.get(&sms.id) {
            Some(&i) => self.states[i].next_at = next_at,
            None => {
                store::reschedule(c, sms.id, next_at)?;
                if let Some(at) = next_at {
                    self.scheduled.push((sms.id, sms.account_id, at));
                }
            }
        }
        Ok(())
    }

    /// The SMS written so far with a next due time, their accounts, and that time (taken:
    /// the list starts again).
    pub(crate) fn take_scheduled(&mut self) -> Vec<(i64, i64, Timestamp)> {
        std::mem::take(&mut self.scheduled)
    }

    /// Writes the queued states and events. Every transaction that applies moves flushes
    /// them before it commits.
    pub(crate) fn flush(&mut self, c: &mut dyn Conn) -> Result<(), AppError> {
        store::write_states(c, &self.states)?;
        self.scheduled.extend(
            self.states
                .iter()
                .filter_map(|s| s.next_at.map(|at| (s.id, s.account_id, at))),
        );
        self.states.clear();
        self.index.clear();
        self.events.flush(c)?;
        Ok(())
    }

    /// Reads the owners of `recipients` in one statement, for the deliveries to come.
    pub(crate) fn read_owners(
        &mut self,
        c: &mut dyn Conn,
        recipients: Vec<String>,
    ) -> Result<(), AppError> {
        let mut unknown: Vec<String> = recipients
            .into_iter()
            .filter(|r| !self.owners.contains_key(r))
            .collect();
        unknown.sort_unstable();
        unknown.dedup();
        let found = owned::owners_of(c, &unknown)?;
        for r in unknown {
            let owner = found.get(&r).copied().flatten();
            self.owners.insert(r, owner);
        }
        Ok(())
    }

    /// The account owning the number `e164`, if this platform's inventory has it owned.
    fn owner(&mut self, c: &mut dyn Conn, e164: &str) -> Result<Option<i64>, AppError> {
        if let Some(owner) = self.owners.get(e164) {
            return Ok(*owner);
        }
        let owner = owned::by_e164(c, e164)?.and_then(|n| n.account_id);
        self.owners.insert(e164.to_owned(), owner);
        Ok(owner)
    }
}

/// When a move of `sms` happens: `now`, or a millisecond after its last move when that is
/// not earlier, so the `sms.mt.status_update` events of one SMS carry strictly increasing
/// `event_at` (also when one receipt moves it two steps in one transaction).
fn move_time(sms: &Sms, now: Timestamp) -> Timestamp {
    match sms.history.last() {
        Some(last) if last.at >= now => last.at.plus_ms(1),
        _ => now,
    }
}

/// The simulated network, when `sms` is carried by it (and it is on).
pub(crate) fn simulated_carrier<'a>(state: &'a AppState, sms: &Sms) -> Option<&'a Simulated> {
    (sms.carrier == SIMULATED)
        .then(|| state.networks.simulated().map(|s| s.as_ref()))
        .flatten()
}

/// Moves `sms` to `next`, schedules what follows, emits the event; on the simulated
/// network, delivery to a number of this platform also reaches its owner as an inbound SMS.
/// Returns the SMS as it now is.
pub(crate) fn apply(
    c: &mut dyn Conn,
    state: &AppState,
    moves: &mut Moves,
    sms: &Sms,
    next: SmsStatus,
    error: &str,
    now: Timestamp,
) -> Result<Sms, AppError> {
    let at = move_time(sms, now);
    let simulated = simulated_carrier(state, sms);
    let following = simulated
        .and_then(|sim| sim.next_status(&sms.to, next))
        .map(|(_, after)| at.plus_ms(after));
    let mut moved = sms.clone();
    moved.history.push(StatusChange {
        old_status: sms.status.clone(),
        new_status: next.as_str().to_owned(),
        at,
    });
    moved.status = next.as_str().to_owned();
    moved.status_error = error.to_owned();
    moved.next_at = following;
    moved.updated = at;
    if next == SmsStatus::Sent {
        moved.sent_at = moved.sent_at.or(Some(at));
    }
    if next == SmsStatus::Delivered {
        moved.delivered_at = moved.delivered_at.or(Some(at));
    }
    moves.queue_state(&moved, store::history_line(&sms.status, next.as_str(), at));
    moves.events.queue(c, &moved, at)?;
    if next == SmsStatus::Delivered
        && simulated.is_some()
        && let Some(owner_id) = moves.owner(c, &sms.to)?
        && let Some(owner) = accounts::by_id(c, owner_id)?
    {
        // Written first, so the delivery's event comes before the `sms.mo` it causes.
        moves.flush(c)?;
        receive(c, state, &owner, &sms.from, &sms.to, &sms.body, at)?;
        moves.received = true;
    }
    Ok(moved)
}

/// Writes the moves planned with `sms` ([`Sms::take_planned`]), each at its planned time
/// and with its event (written when someone receives it now, or a console feed watched the
/// account at that time), before the worker makes its next move; gives the SMS as moved.
pub(crate) fn apply_planned(
    c: &mut dyn Conn,
    state: &AppState,
    moves: &mut Moves,
    sms: Sms,
) -> Result<Sms, AppError> {
    let planned = sms.planned(None);
    let mut moved = Sms {
        plan_sent_at: None,
        plan_queued_at: None,
        plan_delivered_at: None,
        ..sms
    };
    for (at, next) in planned {
        moved = apply(c, state, moves, &moved, next, "", at)?;
    }
    Ok(moved)
}

/// The SMS as handed to its network: the text split into its parts, and the concatenation
/// reference every submission of it carries.
pub(crate) fn outbound(sms: &Sms) -> OutboundSms {
    let encoding = Encoding::parse(&sms.encoding).unwrap_or(Encoding::Unicode);
    let parts = layout(&sms.body, Some(encoding))
        .map(|l| l.parts)
        .unwrap_or_else(|_| vec![sms.body.clone()]);
    OutboundSms {
        sid: sms.sid.to_string(),
        from: sms.from.clone(),
        to: sms.to.clone(),
        parts,
        encoding,
        flash: sms.flash,
        // The SMS's own number, not a counter: the same on every try and every node.
        reference: (sms.id.rem_euclid(1 << 16)) as u16,
    }
}

/// Records the simulated network's answer to the submission of `sms`: pending, error with
/// a refund when refused for good, due again later when refused for now.
pub(crate) fn settle_now(
    c: &mut dyn Conn,
    state: &AppState,
    moves: &mut Moves,
    sms: &Sms,
    outcome: &Result<Accepted, Rejected>,
    now: Timestamp,
) -> Result<(), AppError> {
    match outcome {
        Ok(accepted) => {
            apply(c, state, moves, sms, SmsStatus::Pending, "", now)?;
            moves.set_message_ids(c, sms.id, accepted.message_ids.join(","))?;
        }
        Err(rejected) if rejected.permanent => refuse(c, state, moves, sms, &rejected.reason, now)?,
        Err(_) => moves.reschedule(c, sms, Some(now.plus_ms(RETRY_MS)))?,
    }
    Ok(())
}

/// Ends an SMS no network took in `error`, with its debit refunded.
pub(crate) fn refuse(
    c: &mut dyn Conn,
    state: &AppState,
    moves: &mut Moves,
    sms: &Sms,
    reason: &str,
    now: Timestamp,
) -> Result<(), AppError> {
    apply(c, state, moves, sms, SmsStatus::Error, reason, now)?;
    if sms.billing_debit > dialtone_domain::Money::ZERO {
        billing::credit(
            c,
            sms.account_id,
            sms.billing_debit,
            "refund",
            sms.sid.as_str(),
            now,
        )?;
    }
    Ok(())
}
