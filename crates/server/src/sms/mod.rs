//! SMS as use cases shared by every interface (v2.0, JSON-RPC, SMS REST v1.1, scenarios):
//! send, receive, and the events they cause, each in one transaction.

pub mod carrier_events;
pub mod legacy;
pub mod progress;
pub mod receipts;
pub mod submission;

use dialtone_domain::account::AccountStatus;
use dialtone_domain::sms::{
    ALWAYS_ALLOWED_SENDER, Direction, Encoding, Sender, SmsStatus, TextError, TrafficType, layout,
};
use dialtone_domain::{E164, Money, Timestamp};
use dialtone_store::accounts::Account;
use dialtone_store::events::Outbox;
use dialtone_store::numbers::owned;
use dialtone_store::sms::{self as store, NewSms, Sms};
use dialtone_store::{Conn, billing, rates};

use crate::http::error::{ApiError, ApiResult};
use crate::state::AppState;

/// An SMS to send, as validated by an interface.
#[derive(Debug, Clone)]
pub struct Outgoing {
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

/// Maps a text problem to the v2.0 error naming `body` (or `encoding`).
pub fn text_error(e: &TextError) -> ApiError {
    match e {
        TextError::NotGsm(_) => ApiError::invalid("encoding", e.to_string()),
        _ => ApiError::invalid("body", e.to_string()),
    }
}

/// Sends an SMS for the account: checks the sender, debits every part at the destination's
/// rate, stores it as `created`; the worker hands it to the carrier.
pub async fn send(state: &AppState, account: &Account, out: Outgoing) -> ApiResult<Sms> {
    if account.status == AccountStatus::Suspended {
        return Err(ApiError::forbidden(
            "account_suspended",
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
        .ok_or_else(|| ApiError::invalid("to", "no route to this destination"))?;
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
            .ok_or_else(|| ApiError::invalid("to", "no route to this destination"))?;
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
                    .ok_or_else(|| ApiError::internal("price overflow"))?;
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
                    return Err(ApiError::forbidden(
                        "insufficient_credit",
                        format!("this SMS costs {price} cents; the credit is {balance} cents"),
                    ));
                }
                Ok(Some(sms))
            })
            .await?;
        if let Some(sms) = stored {
            state.sms_wake.notify_one();
            return Ok(sms);
        }
    }
    Err(ApiError::internal(
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
) -> ApiResult<String> {
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
                Err(ApiError::forbidden(
                    "sender_not_approved",
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
                Err(ApiError::forbidden(
                    "sender_not_approved",
                    format!("the sender {name:?} needs the operator's approval"),
                ))
            }
        }
    }
}

/// Queues the event of an SMS's current state: `sms.mo` for inbound, `sms.mt.status_update`
/// (also to the SMS's own webhook) for outbound.
pub fn queue_event(outbox: &mut Outbox, sms: &Sms, billing_mode: &str, now: Timestamp) {
    let data = legacy::sms_object_text(sms, billing_mode);
    if sms.direction == Direction::Inbound.as_str() {
        outbox.push(sms.account_id, "sms.mo", data, None, None, now);
    } else {
        // One SMS's status updates reach each subscriber in order.
        outbox.push(
            sms.account_id,
            "sms.mt.status_update",
            data,
            sms.webhook_url.as_deref(),
            Some(sms.sid.as_str()),
            now,
        );
    }
}

/// Records an inbound SMS for the owner of `to` (within the caller's transaction) and emits
/// `sms.mo`. Returns the stored SMS.
pub fn receive(
    c: &mut dyn Conn,
    state: &AppState,
    owner: &Account,
    from: &str,
    to: &str,
    body: &str,
    now: Timestamp,
) -> ApiResult<Sms> {
    let text = layout(body, None).map_err(|e| text_error(&e))?;
    let new = NewSms {
        account_id: owner.id,
        direction: Direction::Inbound.as_str(),
        from: from.to_owned(),
        to: to.to_owned(),
        body: body.to_owned(),
        encoding: text.encoding.as_str(),
        parts: text.parts.len() as i64,
        traffic_type: None,
        status: SmsStatus::Received.as_str(),
        user_data: None,
        flash: false,
        webhook_url: None,
        billing_debit: Money::ZERO,
        carrier: "platform".to_owned(),
        next_at: None,
        delivered_at: Some(now),
    };
    let sms = store::insert(c, &new, now)?;
    let mut outbox = Outbox::default();
    queue_event(&mut outbox, &sms, owner.billing_mode.as_str(), now);
    outbox.flush(c)?;
    // The scenario attached to the number answers it (the runs worker starts the run).
    let context = serde_json::json!({
        "sid": sms.sid.as_str(),
        "direction": "inbound",
        "fromNumber": sms.from,
        "toNumber": sms.to,
        "bodyText": sms.body,
        "encoding": sms.encoding,
        "parts": sms.parts,
        "status": sms.status,
        "created": sms.created.to_rfc3339(),
    });
    crate::scenarios::call::start_inbound_sms(
        c,
        owner.id,
        to,
        context,
        now,
        &state.parsed,
        state.config.quota_running_runs,
    )?;
    Ok(sms)
}
