//! Submissions to real networks (SMPP connectors): each SMS on its own task, its parts
//! handed to its connector at once (they share the connector's window and pace), each
//! part's message id stored the moment its `submit_sm_resp` arrives, then the SMS settled.
//!
//! An SMS is leased for [`LEASE_MS`] in the worker's transaction before it is handed over,
//! so no other node submits it meanwhile; the connector answers every part within the lease
//! (a part it cannot send in time is refused for now), so a lease never runs out under a
//! submission in progress. A node that dies mid-submission loses nothing: the lease ends and
//! another node submits the parts not recorded (delivery to the carrier is at least once).
//!
//! Only the missing parts are submitted again, with the SMS's own concatenation reference,
//! so a handset never gets a part twice because another part was refused for now. Nothing
//! here waits for another connector: a silent SMSC holds up only its own SMS.

use std::sync::Arc;
use std::time::Duration;

use dialtone_carrier::smpp::receipt;
use dialtone_carrier::{Carrier, Instant, OutboundSms, Rejected};
use dialtone_domain::Timestamp;
use dialtone_domain::sms::SmsStatus;
use dialtone_store::sms::{self as store, Sms};
use dialtone_store::{Conn, sms_parts};

use super::moves::{Moves, RETRY_MS, apply, outbound, refuse};
use crate::error::AppError;
use crate::state::AppState;

/// How long an SMS is leased while it is submitted.
pub(crate) const LEASE_MS: i64 = 30_000;
/// How much sooner than the lease's end every part of a submission is answered: time to
/// store the outcome before another node may take the SMS.
const MARGIN: Duration = Duration::from_secs(3);
/// How often an SMS whose network is gone looks for a route again.
const ROUTE_RETRY_MS: i64 = 10_000;

/// An SMS leased for submission, with what its network still has to take.
pub(crate) struct Submission {
    sms_id: i64,
    network: String,
    carrier: Arc<dyn Carrier>,
    outbound: Arc<OutboundSms>,
    /// The parts (1-based) no network has taken yet.
    parts: Vec<usize>,
}

/// Counts one submission while it lasts.
struct Running(AppState);

impl Drop for Running {
    fn drop(&mut self) {
        self.0.submissions.sub(1);
    }
}

/// A network by name.
type Network = (String, Arc<dyn Carrier>);

/// Where an SMS goes: its own network while it runs; when it is gone, the connector that
/// routes its destination now (the SMS is moved to it); None while no connector does.
fn route(c: &mut dyn Conn, state: &AppState, sms: &Sms) -> Result<Option<Network>, AppError> {
    if let Some(carrier) = state.networks.carrier(&sms.carrier) {
        return Ok(Some((sms.carrier.clone(), carrier)));
    }
    let Some(name) = state.networks.connector_for(&sms.to) else {
        return Ok(None);
    };
    let Some(carrier) = state.networks.carrier(&name) else {
        return Ok(None);
    };
    store::set_carrier(c, sms.id, &name)?;
    tracing::info!(sms = %sms.sid, from = %sms.carrier, to = %name, "sms: routed again, its network is gone");
    Ok(Some((name, carrier)))
}

/// In the worker's transaction: routes a `created` or `pending` SMS, makes it `pending`,
/// leases it, and says what to submit. An SMS whose network is gone and that no connector
/// routes waits (due again in a while), in its status, never handed to the simulated
/// network.
pub(crate) fn lease(
    c: &mut dyn Conn,
    state: &AppState,
    moves: &mut Moves,
    sms: Sms,
    now: Timestamp,
) -> Result<Option<Submission>, AppError> {
    let Some((network, carrier)) = route(c, state, &sms)? else {
        moves.reschedule(c, &sms, Some(now.plus_ms(ROUTE_RETRY_MS)))?;
        return Ok(None);
    };
    let sms = if sms.status == SmsStatus::Created.as_str() {
        apply(c, state, moves, &sms, SmsStatus::Pending, "", now)?
    } else {
        sms
    };
    let taken = sms_parts::taken(c, sms.id)?;
    let outbound = outbound(&sms);
    let parts: Vec<usize> = (1..=outbound.parts.len())
        .filter(|p| !taken.contains(&(*p as i64)))
        .collect();
    moves.reschedule(c, &sms, Some(now.plus_ms(LEASE_MS)))?;
    Ok(Some(Submission {
        sms_id: sms.id,
        network,
        carrier,
        outbound: Arc::new(outbound),
        parts,
    }))
}

/// Runs a leased submission on its own task.
pub(crate) fn spawn(state: &AppState, submission: Submission) {
    state.submissions.add(1);
    let running = Running(state.clone());
    let until = Instant::now() + Duration::from_millis(LEASE_MS as u64) - MARGIN;
    let state = state.clone();
    tokio::spawn(async move {
        let _running = running;
        if let Err(e) = run(&state, submission, until).await {
            // Left to the lease: the SMS is due again when it ends.
            tracing::error!(error = %format!("{e:#}"), "sms: a submission could not be recorded");
        }
    });
}

/// Submits the missing parts at once, records each as it is taken, then settles the SMS.
async fn run(state: &AppState, s: Submission, until: Instant) -> Result<(), AppError> {
    let parts = s.parts.iter().map(|&part| {
        let (carrier, outbound) = (s.carrier.clone(), s.outbound.clone());
        let (state, network, sms_id) = (state.clone(), s.network.clone(), s.sms_id);
        // Each part on its own task: its id is stored as soon as its response arrives,
        // whatever the other parts are waiting for.
        tokio::spawn(async move {
            let taken = carrier.submit_part(&outbound, part, until).await;
            match taken {
                Ok(message_id) => {
                    record_part(&state, sms_id, network, part, message_id).await?;
                    Ok(None)
                }
                Err(refused) => Ok::<_, AppError>(Some((part, refused))),
            }
        })
    });
    let mut refused: Option<(usize, Rejected)> = None;
    let mut failure = None;
    for done in futures_util::future::join_all(parts).await {
        match done {
            Ok(Ok(None)) => {}
            Ok(Ok(Some((part, r)))) => {
                // A refusal for good outweighs one for now.
                if refused
                    .as_ref()
                    .is_none_or(|(_, kept)| r.permanent && !kept.permanent)
                {
                    refused = Some((part, r));
                }
            }
            Ok(Err(e)) => failure = Some(e),
            Err(e) => failure = Some(AppError::internal(e.to_string())),
        }
    }
    if let Some(e) = failure {
        return Err(e);
    }
    settle(state, s.sms_id, refused).await
}

/// Stores the network's id of one part, and applies the receipts that arrived for it before
/// it was stored.
async fn record_part(
    state: &AppState,
    sms_id: i64,
    network: String,
    part: usize,
    message_id: String,
) -> Result<(), AppError> {
    let st = state.clone();
    let now = state.clock.now();
    state
        .store
        .background()
        .write_repeatable(move |c| {
            let key = receipt::id_key(&message_id);
            if sms_parts::insert(c, sms_id, &network, part as i64, &key, now)?
                && let Some(row) = sms_parts::get(c, sms_id, part as i64)?
            {
                super::receipts::apply_kept(c, &st, &network, &message_id, &row, now)?;
            }
            Ok::<_, AppError>(())
        })
        .await
}

/// Settles an SMS once every part of its submission was answered: `sent` when the network
/// took every part; refused for good: `error` (refunded) when no part left, else `failed`;
/// refused for now: due again later, with only the missing parts to submit.
async fn settle(
    state: &AppState,
    sms_id: i64,
    refused: Option<(usize, Rejected)>,
) -> Result<(), AppError> {
    let st = state.clone();
    let now = state.clock.now();
    state
        .store
        .background()
        .write_repeatable(move |c| {
            let Some(sms) = store::by_id_locked(c, sms_id)? else {
                return Ok(());
            };
            // Receipts (or an operator) moved it on meanwhile: nothing left to settle.
            if sms.status != SmsStatus::Pending.as_str() {
                return Ok(());
            }
            let mut moves = Moves::default();
            let taken = sms_parts::taken(c, sms_id)?.len() as i64;
            match &refused {
                Some((_, r)) if r.permanent && taken == 0 => {
                    refuse(c, &st, &mut moves, &sms, &r.reason, now)?;
                }
                Some((part, r)) if r.permanent => {
                    let reason = format!("part {part}: {}", r.reason);
                    apply(c, &st, &mut moves, &sms, SmsStatus::Failed, &reason, now)?;
                }
                _ if taken >= sms.parts => {
                    apply(c, &st, &mut moves, &sms, SmsStatus::Sent, "", now)?;
                }
                Some((_, r)) => {
                    tracing::info!(sms = %sms.sid, reason = %r.reason, "sms: refused for now, due again");
                    moves.reschedule(c, &sms, Some(now.plus_ms(RETRY_MS)))?;
                }
                None => moves.reschedule(c, &sms, Some(now.plus_ms(RETRY_MS)))?,
            }
            moves.flush(c)?;
            Ok::<_, AppError>(())
        })
        .await
}
