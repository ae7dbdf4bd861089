//! Outbound SMS: validated, priced, billed and stored in one transaction, then handed to
//! the SMS worker.

use dialtone_domain::account::AccountStatus;
use dialtone_domain::sms::{
    ALWAYS_ALLOWED_SENDER, Direction, Encoding, Sender, SmsStatus, TrafficType, layout,
};
use dialtone_domain::{E164, Money};
use dialtone_store::accounts::Account;
use dialtone_store::numbers::owned;
use dialtone_store::sms::{self as store, NewSms, Sms};
use dialtone_store::{Conn, billing, rates};

use super::text::text_error;
use crate::error::{AppError, AppResult, ErrorCode};
use crate::state::AppState;

/// An SMS to send, as validated by an interface.
#[derive(Debug, Clone)]
pub(crate) struct Outgoing {
    /// Destination.
    pub to: E164,
    /// Sender as asked.
    pub from: Sender,
    /// Text.
    pub body: String,
    /// Forced encoding, if any.
    pub encoding: Option<Encoding>,
    /// Traffic type.
    pub traffic_type: TrafficType,
    /// Customer data.
    pub user_data: Option<String>,
    /// Flash SMS.
    pub flash: bool,
    /// Per-SMS webhook endpoint.
    pub webhook_url: Option<String>,
    /// Replace `%STOPNUM%` for custom senders (SMS REST v1.1).
    pub replace_stopnum: bool,
}

/// Sends an SMS for the account: checks the sender, debits every part at the destination's
/// rate, stores it as `created`; the worker hands it to the carrier.
pub(crate) async fn send(state: &AppState, account: &Account, out: Outgoing) -> AppResult<Sms> {
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
    let (account_id, parent_id) = (account.id, account.parent_id);
    let shared_sender = state.config.shared_sender.clone();
    let carrier = state
        .networks
        .network_for(out.to.as_str())
        .ok_or_else(|| AppError::invalid("to", "no route to this destination"))?;
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
        let (out, body, text) = (out.clone(), body.clone(), text.clone());
        let (shared_sender, carrier) = (shared_sender.clone(), carrier.clone());
        let now = state.clock.now();
        let stored = state
            .store
            .write_repeatable(move |c| {
                if rates::version(c)? != rates.version() {
                    return Ok(None);
                }
                let from =
                    resolve_sender(c, account_id, parent_id, &out.from, &out.to, &shared_sender)?;
                let parts = text.parts.len() as i64;
                let price = rate
                    .sms_price
                    .checked_mul(parts)
                    .ok_or_else(|| AppError::internal("price overflow"))?;
                let new = NewSms {
                    account_id,
                    direction: Direction::Outbound.as_str(),
                    from,
                    to: out.to.as_str().to_owned(),
                    body: body.clone(),
                    encoding: text.encoding.as_str(),
                    parts,
                    traffic_type: Some(out.traffic_type.as_str()),
                    status: SmsStatus::Created.as_str(),
                    user_data: out.user_data.clone(),
                    flash: out.flash,
                    webhook_url: out.webhook_url.clone(),
                    billing_debit: price,
                    carrier: carrier.clone(),
                    next_at: Some(now),
                    delivered_at: None,
                };
                let sms = store::insert(c, &new, now)?;
                if price > Money::ZERO
                    && let billing::Spend::Insufficient { balance } =
                        billing::debit(c, account_id, price, "sms", sms.sid.as_str(), now)?
                {
                    return Err(AppError::new(
                        ErrorCode::InsufficientCredit,
                        format!("this SMS costs {price} cents; the credit is {balance} cents"),
                    ));
                }
                Ok(Some(sms))
            })
            .await?;
        if let Some(sms) = stored {
            state.sms_hints.add(sms.id, sms.next_at.unwrap_or(now));
            state.sms_wake.notify_one();
            return Ok(sms);
        }
    }
    Err(AppError::internal(
        "the rate table kept changing while the SMS was priced",
    ))
}

fn resolve_sender(
    c: &mut dyn Conn,
    account_id: i64,
    parent_id: Option<i64>,
    from: &Sender,
    to: &E164,
    shared: &str,
) -> AppResult<String> {
    match from {
        Sender::Auto => {
            let country = to.country().unwrap_or_default();
            Ok(store::number_in_country(c, account_id, &country)?
                .unwrap_or_else(|| shared.to_owned()))
        }
        Sender::Number(n) => {
            if owned::get(c, account_id, n.as_str())?.is_some() {
                Ok(n.as_str().to_owned())
            } else {
                Err(AppError::new(
                    ErrorCode::SenderNotApproved,
                    format!("{n} is not one of the account's numbers"),
                ))
            }
        }
        Sender::Alphanumeric(name) => {
            if name == ALWAYS_ALLOWED_SENDER
                || store::sender_approved(c, account_id, parent_id, name)?
            {
                Ok(name.clone())
            } else {
                Err(AppError::new(
                    ErrorCode::SenderNotApproved,
                    format!("the sender {name:?} needs the operator's approval"),
                ))
            }
        }
    }
}
