//! The events an SMS's state causes: `sms.mo` for inbound, `sms.mt.status_update` for
//! outbound.
//!
//! An event's `data` is the payload its deliveries carry: the earlier interfaces' SMS
//! object, which the SMS worker would otherwise serialize for each of an SMS's four moves
//! (about 760 bytes each, written in the same commit as the move). When the outbox knows
//! that no subscription and no per-SMS webhook receives the event (the worker reads its
//! batch's subscriptions first), the event is still recorded with its move, and its `data`
//! keeps only the fields that name the SMS and the status (`hash`, `status`): nothing could
//! ever read the rest, since deliveries are made with the event and never later. When the
//! outbox does not know, the whole object is written.

use dialtone_domain::Timestamp;
use dialtone_domain::sms::Direction;
use dialtone_store::events::Outbox;
use dialtone_store::sms::Sms;

use super::legacy;

/// The type of the events of outbound SMS.
pub(crate) const MT_STATUS: &str = "sms.mt.status_update";

/// Queues the event of an SMS's current state: `sms.mo` for inbound, `sms.mt.status_update`
/// (also to the SMS's own webhook) for outbound.
pub(crate) fn queue_event(outbox: &mut Outbox, sms: &Sms, billing_mode: &str, now: Timestamp) {
    let inbound = sms.direction == Direction::Inbound.as_str();
    let (event_type, own_hook) = if inbound {
        ("sms.mo", None)
    } else {
        (MT_STATUS, sms.webhook_url.as_deref())
    };
    let data = match outbox.delivers(sms.account_id, event_type, own_hook) {
        Some(false) => legacy::sms_summary_text(sms),
        Some(true) | None => legacy::sms_object_text(sms, billing_mode),
    };
    // Keyed by the SMS: one SMS's status updates reach each subscriber in order, and the
    // console finds the deliveries an SMS caused by it.
    outbox.push(
        sms.account_id,
        event_type,
        data,
        own_hook,
        Some(sms.sid.as_str()),
        now,
    );
}
