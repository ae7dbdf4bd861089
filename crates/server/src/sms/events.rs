//! The events an SMS's state causes: `sms.mo` for inbound, `sms.mt.status_update` for
//! outbound.
//!
//! An event's `data` is the payload its deliveries carry: the earlier interfaces' SMS
//! object, which the SMS worker would otherwise serialize for each of an SMS's four moves
//! (about 760 bytes each, written in the same commit as the move). When the outbox knows
//! that no subscription and no per-SMS webhook receives the event (the worker reads its
//! batch's subscriptions first, and with them whether a console feed watches the account),
//! the event is recorded only while a console live feed watches its account, and then its
//! `data` keeps only the fields that name the SMS and the status (`hash`, `status`): nothing
//! could ever read the rest, since deliveries are made with the event and never later, and
//! with no feed watching nothing could read the event at all. When the outbox does not
//! know, the whole object is written.

use std::collections::HashMap;

use dialtone_domain::Timestamp;
use dialtone_domain::sms::Direction;
use dialtone_store::events::Outbox;
use dialtone_store::sms::Sms;
use dialtone_store::{Conn, DbError, accounts};

use super::legacy;

/// The type of the events of outbound SMS.
pub(crate) const MT_STATUS: &str = "sms.mt.status_update";

/// Queues the event of an SMS's current state: `sms.mo` for inbound, `sms.mt.status_update`
/// (also to the SMS's own webhook) for outbound; none when the outbox knows that nobody
/// receives it and no console feed watches the account ([`Outbox::records`]).
pub(crate) fn queue_event(outbox: &mut Outbox, sms: &Sms, billing_mode: &str, now: Timestamp) {
    let inbound = sms.direction == Direction::Inbound.as_str();
    let (event_type, own_hook) = if inbound {
        ("sms.mo", None)
    } else {
        (MT_STATUS, sms.webhook_url.as_deref())
    };
    if !outbox.records(sms.account_id, event_type, own_hook, now) {
        // Nobody receives it and no console feed watches: nothing could read it.
        return;
    }
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

/// The `sms.mt.status_update` events of one transaction's moves (the SMS worker's, and the
/// simulated network's taking of SMS as they are stored), with what they need of the
/// accounts: read for all of them at once before the moves ([`StatusEvents::read_accounts`]),
/// written together by [`StatusEvents::flush`].
#[derive(Default)]
pub(crate) struct StatusEvents {
    outbox: Outbox,
    /// Billing modes (`b_customer_mode`) read so far, by account.
    modes: HashMap<i64, String>,
}

impl StatusEvents {
    /// Reads what the events to come need of `accounts`, one statement for all of them (one
    /// read a batch, not one an account): their subscriptions to `sms.mt.status_update` and
    /// the console feeds' watches, so that an event nobody receives is written without the
    /// SMS object, or not at all when no feed watches, and the billing
    /// modes of those that receive them, the only ones whose events show it.
    pub(crate) fn read_accounts(
        &mut self,
        c: &mut dyn Conn,
        accounts: impl IntoIterator<Item = i64>,
    ) -> Result<(), DbError> {
        let mut accounts: Vec<i64> = accounts.into_iter().collect();
        accounts.sort_unstable();
        accounts.dedup();
        self.outbox
            .read_hooks_of(c, accounts.iter().copied(), MT_STATUS)?;
        let unknown: Vec<i64> = accounts
            .into_iter()
            .filter(|a| !self.modes.contains_key(a))
            .filter(|a| self.outbox.delivers(*a, MT_STATUS, None) != Some(false))
            .collect();
        let found = accounts::billing_modes(c, &unknown)?;
        for account in unknown {
            let mode = found.get(&account).map_or("prepaid", |m| m.as_str());
            self.modes.insert(account, mode.to_owned());
        }
        Ok(())
    }

    /// Queues the event of `sms` as it now is, moved at `at`: with the whole SMS object and
    /// its account's billing mode when someone receives it (the mode read here when
    /// [`StatusEvents::read_accounts`] did not: an SMS with its own webhook, of an account
    /// with no subscription), else with its `hash` and `status` while a console feed
    /// watches the account, else not at all.
    pub(crate) fn queue(
        &mut self,
        c: &mut dyn Conn,
        sms: &Sms,
        at: Timestamp,
    ) -> Result<(), DbError> {
        let received = self
            .outbox
            .delivers(sms.account_id, MT_STATUS, sms.webhook_url.as_deref());
        let mode = match received {
            Some(false) => String::new(),
            Some(true) | None => self.mode(c, sms.account_id)?,
        };
        queue_event(&mut self.outbox, sms, &mode, at);
        Ok(())
    }

    /// Whether an `sms.mt.status_update` of the account (to `own_hook`, an SMS's own
    /// webhook) made at `at` would be written: see [`Outbox::records`] (true when the
    /// account was not read).
    pub(crate) fn records(&self, account_id: i64, own_hook: Option<&str>, at: Timestamp) -> bool {
        self.outbox.records(account_id, MT_STATUS, own_hook, at)
    }

    /// Writes the queued events and their deliveries.
    pub(crate) fn flush(&mut self, c: &mut dyn Conn) -> Result<(), DbError> {
        self.outbox.flush(c)
    }

    fn mode(&mut self, c: &mut dyn Conn, account_id: i64) -> Result<String, DbError> {
        if let Some(m) = self.modes.get(&account_id) {
            return Ok(m.clone());
        }
        let mode = accounts::by_id(c, account_id)?.map_or_else(
            || "prepaid".to_owned(),
            |a| a.billing_mode.as_str().to_owned(),
        );
        self.modes.insert(account_id, mode.clone());
        Ok(mode)
    }
}
