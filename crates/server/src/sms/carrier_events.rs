//! What real networks tell the platform: delivery receipts move outbound SMS on, and
//! inbound SMS are received on the owner's number (event `sms.mo`, attached scenario).
//!
//! Each event is stored in one transaction before the SMSC gets its `deliver_sm_resp`, so
//! nothing an SMSC delivered is lost: a failed write asks the SMSC to deliver again later.
//! A receipt can outrun the commit of its own submission (the SMSC answers the submit, then
//! sends the receipt at once): a receipt whose id is not known yet is kept in the database
//! and applied when the part is recorded (`receipts`), never dropped.

use dialtone_carrier::smpp::CarrierEvent;
use dialtone_store::numbers::owned;
use dialtone_store::{accounts, inbound_parts};
use tokio::sync::mpsc;

use super::receipts::{self, Applied};
use crate::error::AppError;
use crate::state::AppState;

/// Handles the networks' events until every connector is gone.
pub(crate) async fn run(state: AppState, mut events: mpsc::Receiver<CarrierEvent>) {
    while let Some(event) = events.recv().await {
        handle(&state, event).await;
    }
}

/// Stores one event, then answers the SMSC.
pub async fn handle(state: &AppState, event: CarrierEvent) {
    match event {
        CarrierEvent::Receipt {
            connector,
            receipt,
            ack,
        } => {
            let st = state.clone();
            let now = state.clock.now();
            let network = connector.clone();
            let stored = state
                .store
                .write(move |c| receipts::apply_or_keep(c, &st, &network, &receipt, now))
                .await;
            match stored {
                Ok(Applied::Matched) => ack.accept(),
                Ok(Applied::Kept(id)) => {
                    ack.accept();
                    // Its part may have been recorded beside it (PostgreSQL): try once more
                    // now that it is committed; the worker tries again later.
                    let st = state.clone();
                    let now = state.clock.now();
                    if let Err(e) = state
                        .store
                        .write(move |c| receipts::match_kept(c, &st, id, now))
                        .await
                    {
                        tracing::warn!(%connector, error = %format!("{e:#}"), "smpp: a kept receipt is left to the worker");
                    }
                }
                Err(e) => {
                    tracing::error!(%connector, error = %format!("{e:#}"), "smpp: cannot store a receipt; the SMSC will resend it");
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
                return;
            }
            let st = state.clone();
            let now = state.clock.now();
            let (f, t, network) = (from.clone(), to.clone(), connector.clone());
            let stored = state
                .store
                .write(move |c| -> Result<bool, AppError> {
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
                    super::inbound::receive(c, &st, &owner, &f, &t, &text, now)?;
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
                    tracing::error!(error = %format!("{e:#}"), "smpp: cannot store an inbound SMS; the SMSC will resend it");
                    ack.retry_later();
                }
            }
        }
    }
}
