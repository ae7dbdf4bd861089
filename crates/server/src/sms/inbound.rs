//! Inbound SMS: stored for the owner of the number, announced with `sms.mo`, and handed to
//! the scenario attached to the number.

use dialtone_domain::sms::{Direction, SmsStatus, layout};
use dialtone_domain::{Money, Timestamp};
use dialtone_store::Conn;
use dialtone_store::accounts::Account;
use dialtone_store::events::Outbox;
use dialtone_store::sms::{self as store, NewSms, Sms};

use super::events::queue_event;
use super::text::text_error;
use crate::error::AppResult;
use crate::state::AppState;

/// Records an inbound SMS for the owner of `to` (within the caller's transaction) and emits
/// `sms.mo`. Returns the stored SMS.
pub(crate) fn receive(
    c: &mut dyn Conn,
    state: &AppState,
    owner: &Account,
    from: &str,
    to: &str,
    body: &str,
    now: Timestamp,
) -> AppResult<Sms> {
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
        history: Vec::new(),
        part_ids: None,
        plan_sent_at: None,
        plan_queued_at: None,
        plan_delivered_at: None,
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
    crate::scenarios::runs::start_inbound_sms(
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
