//! The SMS worker: hands `created` SMS to the carrier and applies the status moves that are
//! due, each with its history line and its event, a batch to a transaction and its writes
//! together ([`Moves`]).
//!
//! The simulated network answers without I/O, inside the transaction that takes the SMS,
//! and its statuses follow a known timetable, applied here when due. An SMS for a real
//! network (SMPP) is leased and handed to [`submission`](super::submission), which submits
//! it part by part outside the transaction: it becomes `pending` when first handed over,
//! `sent` when the SMSC took every part, and its receipts move it on (`receipts`).

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};

use dialtone_carrier::{Accepted, Carrier, OutboundSms, Rejected, Simulated};
use dialtone_domain::Timestamp;
use dialtone_domain::sms::{Encoding, SmsStatus, layout};
use dialtone_store::accounts;
use dialtone_store::events::Outbox;
use dialtone_store::numbers::owned;
use dialtone_store::sms::{self as store, Sms, StateWrite, StatusChange};
use dialtone_store::{Conn, billing};

use crate::http::error::ApiError;
use crate::networks::SIMULATED;
use crate::state::AppState;

/// Most SMS handled per transaction while other writes are in flight (requests, as a rule;
/// see [`Pacing`]).
/// The worker's transaction holds the single SQLite writer and every request queued behind
/// it waits; the worker loops at once while work is due, so its batch sets its share of the
/// writer. With 100 moves a tick it took half the writer's time under an SMS load and the
/// accepted rate stayed at 35% of ping; with 25 the statuses lag during the burst and catch
/// up after it (docs/benchmarks.md).
const BATCH_SHARED: i64 = 25;
/// Most SMS handled per transaction when no other write waits: statuses catch up after a
/// burst in fewer, larger commits.
const BATCH_ALONE: i64 = 250;
/// Other writes in flight above which the writer counts as shared: the other workers' loop
/// has a few at a time, a client load dozens.
const BUSY_WRITES: usize = 4;
/// How long after a tick saw the writer shared the worker keeps to [`BATCH_SHARED`]: the
/// count of writes in flight is read once a tick, right after the tick's own commit
/// answered the requests committed with it, so under a client load it reads low now and
/// then (a tenth of the ticks of a 64-connection SMS load took [`BATCH_ALONE`] SMS, a third
/// of the worker's moves, each holding the writer for milliseconds).
const SHARED_FOR_MS: i64 = 100;
/// Wait before retrying a submission the carrier refused for now.
pub(crate) const RETRY_MS: i64 = 10_000;

/// Sizes the worker's transactions: [`BATCH_SHARED`] while other writes are in flight, or
/// were at a tick of the last [`SHARED_FOR_MS`]; [`BATCH_ALONE`] otherwise.
#[derive(Debug, Default)]
pub struct Pacing {
    /// When a tick last saw more than [`BUSY_WRITES`] other writes in flight (Unix ms; 0:
    /// never).
    busy_at: AtomicI64,
}

impl Pacing {
    /// The most SMS the tick at `now` handles, given the writes in flight.
    pub fn batch(&self, writes_in_flight: usize, now: Timestamp) -> i64 {
        if writes_in_flight > BUSY_WRITES {
            self.busy_at.store(now.millis(), Ordering::Relaxed);
            return BATCH_SHARED;
        }
        let busy_at = self.busy_at.load(Ordering::Relaxed);
        if busy_at != 0 && now.millis() - busy_at < SHARED_FOR_MS {
            BATCH_SHARED
        } else {
            BATCH_ALONE
        }
    }
}

/// The status moves of one transaction, written together by [`Moves::flush`] (a few
/// multi-row statements for a batch, instead of two or three statements per move), and the
/// accounts' billing modes their events show (`b_customer_mode`).
#[derive(Default)]
pub(crate) struct Moves {
    modes: HashMap<i64, String>,
    /// One new state per SMS (an SMS moved twice in the batch has its last one), by id.
    states: Vec<StateWrite>,
    index: HashMap<i64, usize>,
    outbox: Outbox,
}

impl Moves {
    /// Queues the new state of `moved` and its history line.
    fn queue_state(&mut self, moved: &Sms, line: String) {
        let state = StateWrite {
            id: moved.id,
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
    ) -> Result<(), ApiError> {
        match self.index.get(&sms_id) {
            Some(&i) => self.states[i].message_ids = Some(ids),
            None => {
                c.execute(
                    "UPDATE sms SET message_ids = $1 WHERE id = $2",
                    dialtone_store::params![ids, sms_id],
                )?;
            }
        }
        Ok(())
    }

    /// Sets when the worker next acts on an SMS (a lease, a retry, never): in its queued new
    /// state when it has one (which would otherwise undo this), else at once.
    pub(crate) fn reschedule(
        &mut self,
        c: &mut dyn Conn,
        sms_id: i64,
        next_at: Option<Timestamp>,
    ) -> Result<(), ApiError> {
        match self.index.get(&sms_id) {
            Some(&i) => self.states[i].next_at = next_at,
            None => {
                c.execute(
                    "UPDATE sms SET next_at = $1 WHERE id = $2",
                    dialtone_store::params![next_at, sms_id],
                )?;
            }
        }
        Ok(())
    }

    /// Writes the queued states and events. Every transaction that applies moves flushes
    /// them before it commits.
    pub(crate) fn flush(&mut self, c: &mut dyn Conn) -> Result<(), ApiError> {
        store::write_states(c, &self.states)?;
        self.states.clear();
        self.index.clear();
        self.outbox.flush(c)?;
        Ok(())
    }

    fn mode(&mut self, c: &mut dyn Conn, account_id: i64) -> Result<String, ApiError> {
        if let Some(m) = self.modes.get(&account_id) {
            return Ok(m.clone());
        }
        let mode = accounts::by_id(c, account_id)?.map_or_else(
            || "prepaid".to_owned(),
            |a| a.billing_mode.as_str().to_owned(),
        );
        self.modes.insert(account_id, mode.clone());
        Ok(mode)
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
fn simulated_carrier<'a>(state: &'a AppState, sms: &Sms) -> Option<&'a Simulated> {
    (sms.carrier == SIMULATED)
        .then(|| state.simulated.as_deref())
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
) -> Result<Sms, ApiError> {
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
    let mode = moves.mode(c, sms.account_id)?;
    super::queue_event(&mut moves.outbox, &moved, &mode, at);
    if next == SmsStatus::Delivered
        && simulated.is_some()
        && let Some(number) = owned::by_e164(c, &sms.to)?
        && let Some(owner_id) = number.account_id
        && let Some(owner) = accounts::by_id(c, owner_id)?
    {
        // Written first, so the delivery's event comes before the `sms.mo` it causes.
        moves.flush(c)?;
        super::receive(c, state, &owner, &sms.from, &sms.to, &sms.body, at)?;
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
fn settle_now(
    c: &mut dyn Conn,
    state: &AppState,
    moves: &mut Moves,
    sms: &Sms,
    outcome: &Result<Accepted, Rejected>,
    now: Timestamp,
) -> Result<(), ApiError> {
    match outcome {
        Ok(accepted) => {
            apply(c, state, moves, sms, SmsStatus::Pending, "", now)?;
            moves.set_message_ids(c, sms.id, accepted.message_ids.join(","))?;
        }
        Err(rejected) if rejected.permanent => refuse(c, state, moves, sms, &rejected.reason, now)?,
        Err(_) => moves.reschedule(c, sms.id, Some(now.plus_ms(RETRY_MS)))?,
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
) -> Result<(), ApiError> {
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

/// Handles the SMS work that is due; returns how many SMS moved or were handed to a network.
/// Submissions to real networks run on after it returns, each on its own
/// ([`submission`](super::submission)): a slow SMSC never holds up this loop.
pub async fn tick(state: &AppState) -> anyhow::Result<usize> {
    let now = state.clock.now();
    let batch = state.sms_pacing.batch(state.store.writes_in_flight(), now);
    let st = state.clone();
    let (to_submit, moved) = state
        .store
        .write_repeatable(move |c| {
            let mut moves = Moves::default();
            let mut submit = Vec::new();
            let mut moved = 0;
            for sms in store::due(c, now, batch)? {
                moved += 1;
                let current = SmsStatus::parse(&sms.status).unwrap_or(SmsStatus::Created);
                if current.is_final() {
                    moves.reschedule(c, sms.id, None)?;
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
                        _ => moves.reschedule(c, sms.id, None)?,
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
                    _ => moves.reschedule(c, sms.id, None)?,
                }
            }
            moves.flush(c)?;
            Ok::<_, ApiError>((submit, moved))
        })
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    for submission in to_submit {
        super::submission::spawn(state, submission);
    }
    Ok(moved)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_batch_stays_shared_for_a_while_after_the_writer_was_busy() {
        let pacing = Pacing::default();
        let t = Timestamp::from_millis(1_800_000_000_000);
        assert_eq!(pacing.batch(0, t), BATCH_ALONE, "never busy");
        assert_eq!(
            pacing.batch(BUSY_WRITES, t),
            BATCH_ALONE,
            "at the threshold"
        );
        assert_eq!(pacing.batch(BUSY_WRITES + 1, t), BATCH_SHARED);
        // A tick right after a commit reads few writes in flight: still shared.
        assert_eq!(pacing.batch(0, t.plus_ms(SHARED_FOR_MS - 1)), BATCH_SHARED);
        assert_eq!(pacing.batch(0, t.plus_ms(SHARED_FOR_MS)), BATCH_ALONE);
        // Busy again: the window starts over from the last busy tick.
        assert_eq!(pacing.batch(64, t.plus_ms(500)), BATCH_SHARED);
        assert_eq!(pacing.batch(1, t.plus_ms(550)), BATCH_SHARED);
        assert_eq!(pacing.batch(1, t.plus_ms(600)), BATCH_ALONE);
    }
}
