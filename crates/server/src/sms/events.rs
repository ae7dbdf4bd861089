//! The events an SMS's state causes: `sms.mo` for inbound, `sms.mt.status_update` for
//! outbound.

use dialtone_domain::Timestamp;
use dialtone_domain::sms::Direction;
use dialtone_store::events::Outbox;
use dialtone_store::sms::Sms;

use super::legacy;

/// Queues the event of an SMS's current state: `sms.mo` for inbound, `sms.mt.status_update`
/// (also to the SMS's own webhook) for outbound.
pub(crate) fn queue_event(outbox: &mut Outbox, sms: &Sms, billing_mode: &str, now: Timestamp) {
    let data = legacy::sms_object_text(sms, billing_mode);
    if sms.direction == Direction::Inbound.as_str() {
        // Keyed by the SMS too: the console finds the deliveries an SMS caused by it.
        outbox.push(
            sms.account_id,
            "sms.mo",
            data,
            None,
            Some(sms.sid.as_str()),
            now,
        );
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
