//! Delivery receipts applied to the SMS they are about: the receipt's part takes its
//! status, and the SMS moves as its parts now say, one allowed step at a time, each with its
//! history line and event.
//!
//! A receipt whose message id no part has is kept ([`apply_or_keep`]) before the SMSC is
//! answered. It is applied when the part is recorded ([`apply_kept`], in the transaction
//! that records it); right after its own commit, in case that transaction ran beside it
//! ([`match_kept`], on PostgreSQL, where both commit at once); and by the worker a few times
//! more ([`sweep`]). What still matches nothing stays kept, for the operator to see. Each
//! path takes the kept row before applying it, so a receipt is applied once.
//!
//! On PostgreSQL these paths run beside one another, so every one of them locks what it
//! changes in one order: the SMS's state first, then the kept receipt, then the part
//! ([`lock_sms`]). A path that took the receipt first and then waited for the SMS while
//! another held the SMS and waited for the receipt was a deadlock (seen in CI: PostgreSQL
//! broke it after its one-second `deadlock_timeout`, and the worker's tick waited that long
//! for a connection).

use dialtone_carrier::smpp::{Receipt, receipt};
use dialtone_domain::Timestamp;
use dialtone_domain::sms::SmsStatus;
use dialtone_store::Conn;
use dialtone_store::smpp_receipts::{self, NewReceipt, UnmatchedReceipt};
use dialtone_store::sms::{self as store, Sms};
use dialtone_store::sms_parts::{self, SmsPart};

use super::moves::{Moves, apply};
use crate::error::AppError;
use crate::state::AppState;

/// How many times the worker tries to match a kept receipt (at its next tick, then 2 s,
/// 4 s ... apart, so about 17 minutes in all); after that only a part recorded with its id
/// matches it.
const SWEEP_TRIES: i64 = 10;
/// Most kept receipts the worker tries per tick.
const SWEEP_BATCH: i64 = 100;

/// What became of a receipt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Applied {
    /// Its part took the status (or already had a final one).
    Matched,
    /// No part has its id: it was kept, under this id.
    Kept(i64),
}

/// Applies a receipt from `network`, or keeps it when no part has its id yet.
pub(crate) fn apply_or_keep(
    c: &mut dyn Conn,
    state: &AppState,
    network: &str,
    r: &Receipt,
    now: Timestamp,
) -> Result<Applied, AppError> {
    if let Some(part) = sms_parts::find(c, network, &receipt::id_forms(&r.message_id))? {
        apply_to_part(c, state, &part, r.status, &r.detail, now)?;
        return Ok(Applied::Matched);
    }
    let status = r.status.as_str();
    let key = receipt::id_key(&r.message_id);
    let new = NewReceipt {
        network,
        message_id: &r.message_id,
        message_key: &key,
        status,
        detail: &r.detail,
    };
    let id = smpp_receipts::keep(c, &new, now, now)?;
    tracing::info!(%network, id = %r.message_id, "smpp: receipt before its message id is known, kept");
    Ok(Applied::Kept(id))
}

/// Applies the kept receipt `id` if a part has its id now; whether it did.
pub(crate) fn match_kept(
    c: &mut dyn Conn,
    state: &AppState,
    id: i64,
    now: Timestamp,
) -> Result<bool, AppError> {
    let Some(r) = smpp_receipts::get(c, id)? else {
        return Ok(false);
    };
    let Some(found) = sms_parts::find(c, &r.network, &receipt::id_forms(&r.message_id))? else {
        return Ok(false);
    };
    lock_sms(c, found.sms_id)?;
    if !smpp_receipts::take(c, r.id)? {
        return Ok(false);
    }
    // Read again under the lock: a receipt applied meanwhile may have moved it.
    let Some(part) = sms_parts::get(c, found.sms_id, found.part)? else {
        return Ok(false);
    };
    apply_stored(c, state, &part, &r, now)?;
    Ok(true)
}

/// Locks the state of SMS `sms_id` until the transaction ends (PostgreSQL; SQLite's single
/// writer serialises anyway): what each path that applies a receipt does before it takes the
/// kept receipt or changes a part, so that all of them lock in one order (see the module's
/// documentation).
fn lock_sms(c: &mut dyn Conn, sms_id: i64) -> Result<Option<Sms>, AppError> {
    Ok(store::by_id_locked(c, sms_id)?)
}

/// Applies the kept receipts of `network` that name `message_id`, the id just recorded for
/// `part`, oldest first, and forgets them.
pub(crate) fn apply_kept(
    c: &mut dyn Conn,
    state: &AppState,
    network: &str,
    message_id: &str,
    part: &SmsPart,
    now: Timestamp,
) -> Result<(), AppError> {
    let kept = smpp_receipts::matching(c, network, &receipt::id_forms(message_id))?;
    if kept.is_empty() {
        return Ok(());
    }
    lock_sms(c, part.sms_id)?;
    for r in kept {
        if !smpp_receipts::take(c, r.id)? {
            continue;
        }
        // Read again: the receipt before may have moved it.
        let Some(part) = sms_parts::get(c, part.sms_id, part.part)? else {
            break;
        };
        apply_stored(c, state, &part, &r, now)?;
    }
    Ok(())
}

fn apply_stored(
    c: &mut dyn Conn,
    state: &AppState,
    part: &SmsPart,
    r: &UnmatchedReceipt,
    now: Timestamp,
) -> Result<(), AppError> {
    let status = SmsStatus::parse(&r.status).unwrap_or(SmsStatus::RemoteQueued);
    apply_to_part(c, state, part, status, &r.detail, now)
}

/// Tries the kept receipts that are due once more; returns how many matched.
pub(crate) async fn sweep(state: &AppState) -> anyhow::Result<usize> {
    let st = state.clone();
    let now = state.clock.now();
    let matched = state
        .store
        .background()
        .write_repeatable(move |c| {
            let mut matched = 0;
            let mut found = Vec::new();
            let mut unmatched = Vec::new();
            for r in smpp_receipts::due(c, now, SWEEP_BATCH)? {
                let forms = receipt::id_forms(&r.message_id);
                match sms_parts::find(c, &r.network, &forms)? {
                    Some(part) => found.push((part, r)),
                    None => unmatched.push(r),
                }
            }
            // The SMS locked in the order of their keys, each before its receipt is taken;
            // the tries of the others recorded last, once no SMS is waited for any more
            // (see the module's documentation).
            found.sort_by_key(|(part, r)| (part.sms_id, r.id));
            let mut locked = None;
            for (part, r) in found {
                // Locked once for all of its receipts (they come together in this order).
                if locked != Some(part.sms_id) {
                    lock_sms(c, part.sms_id)?;
                    locked = Some(part.sms_id);
                }
                if !smpp_receipts::take(c, r.id)? {
                    continue;
                }
                let Some(part) = sms_parts::get(c, part.sms_id, part.part)? else {
                    continue;
                };
                apply_stored(c, &st, &part, &r, now)?;
                matched += 1;
            }
            for r in unmatched {
                let tries = r.tries + 1;
                let next = (tries < SWEEP_TRIES).then(|| now.plus_ms(1_000 << tries.clamp(0, 20)));
                smpp_receipts::tried(c, r.id, next)?;
            }
            Ok::<_, AppError>(matched)
        })
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    Ok(matched)
}

/// Records a receipt's status on its part and moves the SMS as its parts now say.
fn apply_to_part(
    c: &mut dyn Conn,
    state: &AppState,
    part: &SmsPart,
    status: SmsStatus,
    detail: &str,
    now: Timestamp,
) -> Result<(), AppError> {
    // A late intermediate receipt (ENROUTE after DELIVRD) never undoes a final one.
    let settled = SmsStatus::parse(&part.status).is_some_and(SmsStatus::is_final);
    if settled && !status.is_final() {
        return Ok(());
    }
    // The SMS first, then its part: the order every path takes (see the module's
    // documentation).
    let sms = lock_sms(c, part.sms_id)?;
    sms_parts::set_status(c, part.id, status.as_str(), detail, now)?;
    let Some(sms) = sms else {
        return Ok(());
    };
    let parts = sms_parts::of_sms(c, sms.id)?;
    if let Some((target, error)) = overall(&parts, sms.parts) {
        advance(c, state, &sms, target, &error, now)?;
    }
    Ok(())
}

/// The status an SMS has by its parts' receipts: failed or expired when one part is;
/// otherwise, once every part is taken, delivered when all are, remote-queued when one is
/// on its way, else sent. None while parts are still to be taken and none failed: the SMS
/// stays pending until its submission settles.
fn overall(parts: &[SmsPart], expected: i64) -> Option<(SmsStatus, String)> {
    let with = |s: SmsStatus| parts.iter().find(|p| p.status == s.as_str());
    let error = |p: &SmsPart| {
        if expected > 1 {
            format!("part {}: {}", p.part, p.detail)
        } else {
            p.detail.clone()
        }
    };
    if let Some(p) = with(SmsStatus::Failed) {
        return Some((SmsStatus::Failed, error(p)));
    }
    if let Some(p) = with(SmsStatus::Expired) {
        return Some((SmsStatus::Expired, error(p)));
    }
    if (parts.len() as i64) < expected.max(1) {
        return None;
    }
    let delivered = parts
        .iter()
        .filter(|p| p.status == SmsStatus::Delivered.as_str())
        .count();
    Some(if delivered as i64 >= expected.max(1) {
        (SmsStatus::Delivered, String::new())
    } else if delivered > 0 || with(SmsStatus::RemoteQueued).is_some() {
        (SmsStatus::RemoteQueued, String::new())
    } else {
        (SmsStatus::Sent, String::new())
    })
}

/// Moves the SMS toward `target` one allowed step at a time (sent, remote-queued,
/// delivered), each with its history line and its event, a millisecond apart.
fn advance(
    c: &mut dyn Conn,
    state: &AppState,
    sms: &Sms,
    target: SmsStatus,
    error: &str,
    now: Timestamp,
) -> Result<(), AppError> {
    let mut moves = Moves::default();
    let mut current = sms.clone();
    for _ in 0..4 {
        let Some(status) = SmsStatus::parse(&current.status) else {
            break;
        };
        if status == target {
            break;
        }
        let next = if status.may_become(target) {
            target
        } else {
            match status {
                SmsStatus::Created => SmsStatus::Pending,
                SmsStatus::Pending => SmsStatus::Sent,
                SmsStatus::Sent => SmsStatus::RemoteQueued,
                _ => break,
            }
        };
        if !status.may_become(next) {
            break;
        }
        let text = if next == target { error } else { "" };
        current = apply(c, state, &mut moves, &current, next, text, now)?;
    }
    moves.flush(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(n: i64, status: SmsStatus) -> SmsPart {
        SmsPart {
            id: n,
            sms_id: 1,
            part: n,
            message_id: n.to_string(),
            status: status.as_str().to_owned(),
            detail: "UNDELIV err:001".into(),
        }
    }

    #[test]
    fn parts_decide() {
        use SmsStatus::*;
        let target = |parts: &[SmsPart], n| overall(parts, n).map(|(s, _)| s);
        assert_eq!(target(&[part(1, Delivered)], 1), Some(Delivered));
        assert_eq!(
            target(&[part(1, Delivered), part(2, Sent)], 2),
            Some(RemoteQueued)
        );
        assert_eq!(
            target(&[part(1, Delivered), part(2, Delivered)], 2),
            Some(Delivered)
        );
        assert_eq!(
            overall(&[part(1, Delivered), part(2, Failed)], 2),
            Some((Failed, "part 2: UNDELIV err:001".into()))
        );
        assert_eq!(target(&[part(1, Expired)], 1), Some(Expired));
        assert_eq!(target(&[part(1, Sent)], 1), Some(Sent));
        // Part 2 not taken yet: the SMS waits for its submission to settle.
        assert_eq!(target(&[part(1, Delivered)], 2), None);
        assert_eq!(target(&[part(1, Failed)], 2), Some(Failed));
    }
}
