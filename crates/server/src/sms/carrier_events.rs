//! What real networks tell the platform: delivery receipts move outbound SMS on, and
//! inbound SMS are received on the owner's number (event `sms.mo`, attached scenario).
//!
//! Each event is stored in one transaction before the SMSC gets its `deliver_sm_resp`, so
//! nothing an SMSC delivered is lost: a failed write asks the SMSC to deliver again later.
//! A receipt can outrun the commit of its own submission (the SMSC answers the submit, then
//! sends the receipt at once): a receipt whose id is not known yet is tried again a few times
//! before it is dropped.

use std::collections::VecDeque;
use std::time::Duration;

use dialtone_carrier::smpp::{CarrierEvent, Receipt, receipt};
use dialtone_domain::sms::SmsStatus;
use dialtone_store::numbers::owned;
use dialtone_store::sms::{self as store, Sms};
use dialtone_store::sms_parts::{self, SmsPart};
use dialtone_store::{Conn, accounts, inbound_parts};
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::progress::{Moves, apply};
use crate::http::error::ApiError;
use crate::state::AppState;

/// How often an unknown receipt is tried again, and how far apart.
const RECEIPT_TRIES: u32 = 40;
const RECEIPT_RETRY: Duration = Duration::from_millis(250);

/// Handles the networks' events until every connector is gone.
pub async fn run(state: AppState, mut events: mpsc::Receiver<CarrierEvent>) {
    let mut deferred: VecDeque<(Instant, u32, CarrierEvent)> = VecDeque::new();
    loop {
        let (tries, event) = match deferred.front().map(|(at, _, _)| *at) {
            Some(at) => tokio::select! {
                e = events.recv() => match e {
                    Some(e) => (0, e),
                    None => break,
                },
                () = tokio::time::sleep_until(at) => match deferred.pop_front() {
                    Some((_, tries, e)) => (tries, e),
                    None => continue,
                },
            },
            None => match events.recv().await {
                Some(e) => (0, e),
                None => break,
            },
        };
        if let Some(unmatched) = handle(&state, event).await {
            if tries + 1 < RECEIPT_TRIES {
                deferred.push_back((Instant::now() + RECEIPT_RETRY, tries + 1, unmatched));
            } else if let CarrierEvent::Receipt {
                connector,
                receipt,
                ack,
            } = unmatched
            {
                tracing::warn!(%connector, id = %receipt.message_id, "smpp: receipt for an unknown message, dropped");
                ack.accept();
            }
        }
    }
}

/// Stores one event and answers the SMSC; gives back a receipt whose message is not known.
pub async fn handle(state: &AppState, event: CarrierEvent) -> Option<CarrierEvent> {
    match event {
        CarrierEvent::Receipt {
            connector,
            receipt,
            ack,
        } => {
            let st = state.clone();
            let (network, r) = (connector.clone(), receipt.clone());
            let now = state.clock.now();
            let stored = state
                .store
                .write(move |c| apply_receipt(c, &st, &network, &r, now))
                .await;
            match stored {
                Ok(true) => ack.accept(),
                Ok(false) => {
                    return Some(CarrierEvent::Receipt {
                        connector,
                        receipt,
                        ack,
                    });
                }
                Err(e) => {
                    tracing::error!(error = %e, "smpp: cannot store a receipt; the SMSC will resend it");
                    ack.retry_later();
                }
            }
        }
        CarrierEvent::Inbound {
            connector,
            from,
            to,
            text,
            part,
            ack,
        } => {
            if text.is_empty() && part.is_none() {
                tracing::warn!(%connector, %from, %to, "smpp: empty inbound SMS, dropped");
                ack.accept();
                return None;
            }
            let st = state.clone();
            let now = state.clock.now();
            let (f, t, network) = (from.clone(), to.clone(), connector.clone());
            let stored = state
                .store
                .write(move |c| -> Result<bool, ApiError> {
                    // A part is kept until its message is whole; then the message is received.
                    let text = match part {
                        None => text,
                        Some(p) => {
                            let which = inbound_parts::Part {
                                network: &network,
                                sender: &f,
                                recipient: &t,
                                reference: i64::from(p.reference),
                                total: i64::from(p.total),
                                seq: i64::from(p.seq),
                            };
                            match inbound_parts::add(c, &which, &text, now)? {
                                Some(whole) => whole,
                                None => return Ok(true),
                            }
                        }
                    };
                    let Some(owner_id) = owned::by_e164(c, &t)?.and_then(|n| n.account_id) else {
                        return Ok(false);
                    };
                    let Some(owner) = accounts::by_id(c, owner_id)? else {
                        return Ok(false);
                    };
                    super::receive(c, &owner, &f, &t, &text, now, &st.parsed)?;
                    Ok(true)
                })
                .await;
            match stored {
                Ok(true) => {
                    ack.accept();
                    state.wake.notify_one();
                }
                Ok(false) => {
                    tracing::warn!(%connector, %from, %to, "smpp: inbound SMS to a number nobody owns, dropped");
                    ack.accept();
                }
                Err(e) => {
                    tracing::error!(error = %e, "smpp: cannot store an inbound SMS; the SMSC will resend it");
                    ack.retry_later();
                }
            }
        }
    }
    None
}

/// Records a receipt on its part and moves the SMS as its parts now say; false when no
/// part has that id (yet).
fn apply_receipt(
    c: &mut dyn Conn,
    state: &AppState,
    network: &str,
    r: &Receipt,
    now: dialtone_domain::Timestamp,
) -> Result<bool, ApiError> {
    let forms = receipt::id_forms(&r.message_id);
    let Some(part) = sms_parts::find(c, network, &forms)? else {
        return Ok(false);
    };
    // A late intermediate receipt (ENROUTE after DELIVRD) never undoes a final one.
    let settled = SmsStatus::parse(&part.status).is_some_and(SmsStatus::is_final);
    if settled && !r.status.is_final() {
        return Ok(true);
    }
    sms_parts::set_status(c, part.id, r.status.as_str(), &r.detail, now)?;
    let Some(sms) = store::by_id(c, part.sms_id)? else {
        return Ok(true);
    };
    let parts = sms_parts::of_sms(c, sms.id)?;
    let (target, error) = overall(&parts, sms.parts);
    advance(c, state, &sms, target, &error, now)?;
    Ok(true)
}

/// The status an SMS has by its parts' receipts: failed or expired when one part is,
/// delivered when all are, remote-queued when one is on its way.
fn overall(parts: &[SmsPart], expected: i64) -> (SmsStatus, String) {
    let with = |s: SmsStatus| parts.iter().find(|p| p.status == s.as_str());
    let error = |p: &SmsPart| {
        if expected > 1 {
            format!("part {}: {}", p.part, p.detail)
        } else {
            p.detail.clone()
        }
    };
    if let Some(p) = with(SmsStatus::Failed) {
        return (SmsStatus::Failed, error(p));
    }
    if let Some(p) = with(SmsStatus::Expired) {
        return (SmsStatus::Expired, error(p));
    }
    let delivered = parts
        .iter()
        .filter(|p| p.status == SmsStatus::Delivered.as_str())
        .count();
    if delivered as i64 >= expected.max(1) {
        (SmsStatus::Delivered, String::new())
    } else if delivered > 0 || with(SmsStatus::RemoteQueued).is_some() {
        (SmsStatus::RemoteQueued, String::new())
    } else {
        (SmsStatus::Sent, String::new())
    }
}

/// Moves the SMS toward `target` one allowed step at a time (sent, remote-queued,
/// delivered), each with its history row and its event.
fn advance(
    c: &mut dyn Conn,
    state: &AppState,
    sms: &Sms,
    target: SmsStatus,
    error: &str,
    now: dialtone_domain::Timestamp,
) -> Result<(), ApiError> {
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
        assert_eq!(overall(&[part(1, Delivered)], 1).0, Delivered);
        assert_eq!(
            overall(&[part(1, Delivered), part(2, Sent)], 2).0,
            RemoteQueued
        );
        assert_eq!(
            overall(&[part(1, Delivered), part(2, Delivered)], 2).0,
            Delivered
        );
        assert_eq!(
            overall(&[part(1, Delivered), part(2, Failed)], 2),
            (Failed, "part 2: UNDELIV err:001".into())
        );
        assert_eq!(overall(&[part(1, Expired)], 1).0, Expired);
        assert_eq!(overall(&[part(1, Sent)], 1).0, Sent);
    }
}
