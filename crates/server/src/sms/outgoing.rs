//! Outbound SMS: validated and priced here, billed and stored in one transaction with the
//! other SMS sent at the same time ([`super::intake`]), then handed to the SMS worker.

use std::sync::Arc;

use dialtone_carrier::Simulated;
use dialtone_domain::account::AccountStatus;
use dialtone_domain::sms::{Sender, SmsStatus, layout};
use dialtone_store::accounts::Account;
use dialtone_store::sms::Sms;

use super::intake::{Intake, Outgoing, Stored, Timetable};
use super::text::text_error;
use crate::error::{AppError, AppResult, ErrorCode};
use crate::networks::SIMULATED;
use crate::state::AppState;

/// Sends an SMS for the account: checks the sender, debits every part at the destination's
/// rate, stores it as `created`; the worker hands it to the carrier (the simulated network
/// takes it in the same write). Gives the SMS as created (see [`as_created`]).
pub(crate) async fn send(state: &AppState, account: &Account, out: Outgoing) -> AppResult<Sms> {
    send_as(state, account, out, None)
        .await?
        .ok_or_else(|| AppError::internal("an authenticated send found its authentication changed"))
}

/// [`send`] for an account taken from the cache of authentication without a read of its
/// own (`KeyCache::assumed`, at `auth_version`): `None`, with nothing stored, when what
/// authentication reads changed since; the caller authenticates again.
pub(crate) async fn send_assumed(
    state: &AppState,
    account: &Account,
    out: Outgoing,
    auth_version: i64,
) -> AppResult<Option<Sms>> {
    send_as(state, account, out, Some(auth_version)).await
}

async fn send_as(
    state: &AppState,
    account: &Account,
    out: Outgoing,
    auth_version: Option<i64>,
) -> AppResult<Option<Sms>> {
    if account.status == AccountStatus::Suspended {
        return Err(AppError::new(
            ErrorCode::AccountSuspended,
            "the account is suspended: sending is refused",
        ));
    }
    let mut body = out.body.clone();
    if out.replace_stopnum && matches!(out.from, Sender::Alphanumeric(_)) {
        body = body.replace("%STOPNUM%", &state.config.stop_number);
    }
    let text = layout(&body, out.encoding).map_err(|e| text_error(&e))?;
    let carrier = state
        .networks
        .network_for(out.to.as_str())
        .ok_or_else(|| AppError::invalid("to", "no route to this destination"))?;
    let shared_sender: Arc<str> = state.config.shared_sender.as_str().into();
    // The simulated network takes the SMS in the write that stores it (see `intake`).
    let taken = state
        .networks
        .simulated()
        .filter(|_| carrier == SIMULATED && Simulated::takes(out.to.as_str()))
        .map(|sim| Timetable::of(sim, out.to.as_str()))
        .filter(|t| !t.0.is_empty());
    // Priced from the rate table in memory; the write checks that the table is still the
    // database's, else the table is loaded again and the write made again (an import
    // between the two), so the price is the one in force when the SMS is stored.
    let mut table = state.rates.get();
    for _ in 0..3 {
        let rates = match table.take() {
            Some(t) => t,
            None => {
                // The whole table: a scan, so on a reader, off the async workers.
                let cache = state.rates.clone();
                state.store.read(move |c| cache.load(c)).await?
            }
        };
        let rate = rates
            .longest_match(out.to.as_str())
            .cloned()
            .ok_or_else(|| AppError::invalid("to", "no route to this destination"))?;
        let now = state.clock.now();
        let item = Intake {
            account_id: account.id,
            parent_id: account.parent_id,
            out: out.clone(),
            body: body.clone(),
            encoding: text.encoding.as_str(),
            parts: text.parts.len() as i64,
            rate,
            rates_version: rates.version(),
            auth_version,
            shared_sender: shared_sender.clone(),
            carrier: carrier.clone(),
            taken: taken.clone(),
            now,
        };
        match state.sms_intake.run(item).await? {
            Stored::Sms(sms) => {
                // `None`: planned to its delivery, the worker never visits it.
                if let Some(due) = sms.next_at {
                    state.sms_hints.add(sms.id, sms.account_id, due);
                    if due <= now {
                        state.sms_wake.notify_one();
                    }
                }
                return Ok(Some(as_created(*sms)));
            }
            Stored::AuthChanged => return Ok(None),
            Stored::RatesChanged => {}
        }
    }
    Err(AppError::internal(
        "the rate table kept changing while the SMS was priced",
    ))
}

/// The SMS as its request created it, which is what the answer to the request shows: a
/// network that took it in the same write (the simulated network, see `intake`) made its
/// first move at the same instant, and that move is what its events and later reads show.
fn as_created(mut sms: Sms) -> Sms {
    if let Some(first) = sms.history.first()
        && first.old_status == SmsStatus::Created.as_str()
    {
        sms.status = first.old_status.clone();
        sms.history.clear();
        sms.updated = sms.created;
    }
    sms
}
