//! What an interface asks to send ([`Outgoing`]), and outbound SMS stored in groups: the
//! requests to send that wait for the database together are priced, stored and debited by
//! one write ([`Coalesced`]), with the rate table's version read once, each sender resolved
//! once per account, the SMS inserted by one statement and the debits settled together,
//! instead of a few statements (round trips on PostgreSQL) per SMS.
//!
//! An SMS for the simulated network, which answers without I/O, is handed to it in the same
//! write ([`Intake::taken`]): stored `pending` with its move from `created`, the
//! network's ids of its parts and the move's event, and due for its next status a step
//! later. The SMS worker would otherwise read it back, move it and write it again at once,
//! in a transaction of its own: a quarter of the SMS throughput on SQLite (docs/benchmarks.md).
//! When nothing receives its moves (no subscription, no webhook of its own, no console feed
//! watching), its `sent` and `remote-queued` are planned with it instead
//! ([`Sms::take_planned`]) and it is due for its last move only; and when that move is its
//! delivery, to a number nobody on this platform owns, within
//! [`PLANNED_FLIGHT_MAX_MS`](store::PLANNED_FLIGHT_MAX_MS), the delivery is planned too and
//! the worker never visits it.

use std::collections::HashMap;
use std::sync::Arc;

use dialtone_carrier::{Carrier, Simulated};
use dialtone_domain::sms::{
    ALWAYS_ALLOWED_SENDER, Direction, Encoding, Sender, SmsStatus, TrafficType,
};
use dialtone_domain::{E164, Money, Timestamp};
use dialtone_store::coalesce::{Coalesced, GroupResults};
use dialtone_store::numbers::owned;
use dialtone_store::rates::Rate;
use dialtone_store::sms::{self as store, NewSms, Sms, StatusChange};
use dialtone_store::{Conn, DbError, billing};

use super::events::StatusEvents;
use crate::error::{AppError, ErrorCode};

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

/// One SMS to store, priced from the rate table of `rates_version`.
#[derive(Debug)]
pub(crate) struct Intake {
    pub account_id: i64,
    pub parent_id: Option<i64>,
    pub out: Outgoing,
    /// The text as sent (after `%STOPNUM%`).
    pub body: String,
    pub encoding: &'static str,
    pub parts: i64,
    pub rate: Rate,
    /// The rate table `rate` comes from: when the database's is another, the SMS is not
    /// stored ([`Stored::RatesChanged`]) and the caller prices it again.
    pub rates_version: i64,
    /// The authentication version the account was taken at without a read of it (see
    /// `KeyCache::assumed`): when the database's is another, the SMS is not stored
    /// ([`Stored::AuthChanged`]) and the caller authenticates again. `None`: the request
    /// read it.
    pub auth_version: Option<i64>,
    /// The sender of SMS sent without one when the account has no number in the country.
    pub shared_sender: Arc<str>,
    pub carrier: String,
    /// When the network takes the SMS as it is stored (the simulated network, for a
    /// destination it does not refuse): its timetable from `pending` on. The SMS is then
    /// stored `pending`, with the move and its event. `None`: stored `created`, and the SMS
    /// worker hands it to its network.
    pub taken: Option<Timetable>,
    pub now: Timestamp,
}

/// The statuses a network that answers without I/O (the simulated network) moves an SMS
/// through after `pending`, each with how long after the one before it falls due.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Timetable(pub Vec<(SmsStatus, i64)>);

impl Timetable {
    /// The simulated network's timetable for an SMS to `to` (its moves the seed's table
    /// allows, at most four).
    pub(crate) fn of(sim: &Simulated, to: &str) -> Timetable {
        let mut steps = Vec::new();
        let mut status = SmsStatus::Pending;
        while let Some((next, after)) = sim.next_status(to, status) {
            if !status.may_become(next) || steps.len() == 4 {
                break;
            }
            steps.push((next, after));
            status = next;
        }
        Timetable(steps)
    }

    /// For an SMS taken at `at`, the moves that can be planned: its `sent` and
    /// `remote-queued` when each is followed by another move (which the worker writes with
    /// them); its delivery too when `deliverable` (its delivery causes nothing: its recipient
    /// is nobody's here) and it ends the timetable within
    /// [`PLANNED_FLIGHT_MAX_MS`](store::PLANNED_FLIGHT_MAX_MS). `None` when the first move
    /// is not `sent` or is the last one (nothing to plan).
    fn plan(&self, at: Timestamp, deliverable: bool) -> Option<Plan> {
        let [(SmsStatus::Sent, a1), (second, a2), rest @ ..] = self.0.as_slice() else {
            return None;
        };
        let sent = at.plus_ms(*a1);
        Some(match (second, rest) {
            (SmsStatus::RemoteQueued, [(last, a3), more @ ..]) => {
                let queued = sent.plus_ms(*a2);
                let delivered = queued.plus_ms(*a3);
                let planned = deliverable
                    && *last == SmsStatus::Delivered
                    && more.is_empty()
                    && delivered.millis() - at.millis() <= store::PLANNED_FLIGHT_MAX_MS;
                Plan {
                    sent,
                    queued: Some(queued),
                    due: (!planned).then_some(delivered),
                    delivered: planned.then_some(delivered),
                }
            }
            _ => Plan {
                sent,
                queued: None,
                due: Some(sent.plus_ms(*a2)),
                delivered: None,
            },
        })
    }
}

/// The moves planned with an SMS as it is stored ([`Sms::take_planned`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Plan {
    sent: Timestamp,
    queued: Option<Timestamp>,
    /// Its delivery, when planned too: then the worker never visits it.
    delivered: Option<Timestamp>,
    /// When the worker is due for the first move not planned (`None`: never).
    due: Option<Timestamp>,
}

/// The sender asked for, as the key of its resolution within a group.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum SenderKey {
    /// No sender: the account's first number in this country.
    Auto(String),
    Number(String),
    Alphanumeric(String),
}

/// What became of an SMS of a group.
#[derive(Debug)]
pub(crate) enum Stored {
    /// Stored, debited: the worker takes it from here.
    Sms(Box<Sms>),
    /// Not stored: the rate table changed since the SMS was priced.
    RatesChanged,
    /// Not stored: what authentication reads changed since the account was taken without
    /// a read (a key revoked, an account suspended, on any node).
    AuthChanged,
}

impl Coalesced for Intake {
    type Output = Stored;
    type Error = AppError;

    fn run_all(c: &mut dyn Conn, items: &[Self]) -> GroupResults<Self> {
        // The group's first round trip: the versions, and what planning its deliveries needs.
        let (first, plannable) = first_reads(c, items)?;
        let (rates_now, auth_now, owned) = (first.rates_version, first.auth_version, first.owned);
        // The group's accounts' balances in one statement, for their deferred debits.
        let accounts: Vec<i64> = items.iter().map(|i| i.account_id).collect();
        billing::read_balances(c, &accounts)?;
        let mut senders: HashMap<(i64, SenderKey), Result<String, AppError>> = HashMap::new();
        // The group's senders picked by country, read together.
        let mut autos: Vec<(i64, String)> = items
            .iter()
            .filter_map(|i| match sender_key(&i.out.from, &i.out.to) {
                SenderKey::Auto(country) => Some((i.account_id, country)),
                SenderKey::Number(_) | SenderKey::Alphanumeric(_) => None,
            })
            .collect();
        autos.sort_unstable();
        autos.dedup();
        if autos.len() > 1 {
            let found = store::numbers_in_countries(c, &autos)?;
            for item in items {
                let key = sender_key(&item.out.from, &item.out.to);
                if let SenderKey::Auto(country) = &key
                    && let Some(number) = found.get(&(item.account_id, country.clone()))
                {
                    let from = automatic_sender(item, number.clone());
                    senders.entry((item.account_id, key)).or_insert(Ok(from));
                }
            }
        }
        let events = receivers_of_taken(c, items)?;
        let mut results: Vec<Option<Result<Stored, AppError>>> = Vec::with_capacity(items.len());
        let mut rows = Vec::new();
        let mut row_of = Vec::new();
        for (i, item) in items.iter().enumerate() {
            if item.auth_version.is_some_and(|v| v != auth_now) {
                results.push(Some(Ok(Stored::AuthChanged)));
                continue;
            }
            if item.rates_version != rates_now {
                results.push(Some(Ok(Stored::RatesChanged)));
                continue;
            }
            let key = (item.account_id, sender_key(&item.out.from, &item.out.to));
            let from = match senders.get(&key) {
                Some(resolved) => resolved.clone(),
                None => {
                    let resolved = resolve_sender(c, item, &key.1)?;
                    senders.insert(key, resolved.clone());
                    resolved
                }
            };
            let from = match from {
                Ok(from) => from,
                Err(refused) => {
                    results.push(Some(Err(refused)));
                    continue;
                }
            };
            let price = item
                .rate
                .sms_price
                .checked_mul(item.parts)
                .ok_or_else(|| AppError::internal("price overflow"))?;
            let deliverable = !owned.contains(item.out.to.as_str())
                && plannable.binary_search(&item.account_id).is_ok();
            rows.push((new_sms(item, from, price, &events, deliverable), item.now));
            row_of.push(i);
            results.push(None);
        }
        // Stored first, so each debit's ledger line names its SMS's sid as stored; an SMS
        // whose debit finds the credit short is deleted again, in this transaction.
        let mut refused = Vec::new();
        for (i, sms) in row_of.into_iter().zip(store::insert_many(c, &rows)?) {
            let (item, price) = (&items[i], sms.billing_debit);
            results[i] = Some(
                if price > Money::ZERO
                    && let billing::Spend::Insufficient { balance } = billing::debit(
                        c,
                        item.account_id,
                        price,
                        "sms",
                        sms.sid.as_str(),
                        item.now,
                    )?
                {
                    refused.push(sms.id);
                    Err(AppError::new(
                        ErrorCode::InsufficientCredit,
                        format!("this SMS costs {price} cents; the credit is {balance} cents"),
                    ))
                } else {
                    Ok(Stored::Sms(Box::new(sms)))
                },
            );
        }
        store::delete_new(c, &refused)?;
        queue_taken(c, &results, events)?;
        Ok(results
            .into_iter()
            .map(|r| r.unwrap_or_else(|| Err(AppError::internal("an SMS of the group was lost"))))
            .collect())
    }
}

/// Most accounts of a group whose SMS's deliveries may be planned: on PostgreSQL each takes
/// an advisory lock until the group's transaction ends, and the server's lock table is
/// shared by every session (`max_locks_per_transaction` × `max_connections`, 6,400 by
/// default): with at most 32 a transaction, 200 writers at once fill it. The SMS of the
/// group's other accounts have their `sent` and `remote-queued` planned only.
pub(crate) const PLANNABLE_ACCOUNTS_MAX: usize = 32;

/// Of the accounts of the group's SMS that the network takes as they are stored, those whose
/// deliveries may be planned, sorted: the first [`PLANNABLE_ACCOUNTS_MAX`] by id.
fn plannable_accounts(accounts: impl Iterator<Item = i64>) -> Vec<i64> {
    let mut accounts: Vec<i64> = accounts.collect();
    accounts.sort_unstable();
    accounts.dedup();
    accounts.truncate(PLANNABLE_ACCOUNTS_MAX);
    accounts
}

/// The group's first reads (`sms::intake_reads`): the versions, which recipients of the SMS
/// the network takes as they are stored are numbers of this platform with an owner (their
/// delivery reaches the owner: not planned) and, on PostgreSQL, the plan locks of the
/// accounts whose deliveries may be planned ([`plannable_accounts`], given with the reads),
/// taken before [`receivers_of_taken`] reads who receives their moves.
fn first_reads(
    c: &mut dyn Conn,
    items: &[Intake],
) -> Result<(store::IntakeReads, Vec<i64>), DbError> {
    let taken = || items.iter().filter(|i| i.taken.is_some());
    let plannable = plannable_accounts(taken().map(|i| i.account_id));
    let mut recipients: Vec<String> = taken()
        .filter(|i| plannable.binary_search(&i.account_id).is_ok())
        .map(|i| i.out.to.as_str().to_owned())
        .collect();
    recipients.sort_unstable();
    recipients.dedup();
    Ok((store::intake_reads(c, &plannable, &recipients)?, plannable))
}

/// Who receives the moves of the group's SMS that the network takes as they are stored
/// (read once for the group): those nobody receives are stored with their moves planned
/// (see `Sms::take_planned`), and the moves' events use what is read.
fn receivers_of_taken(c: &mut dyn Conn, items: &[Intake]) -> Result<StatusEvents, DbError> {
    let mut events = StatusEvents::default();
    let taken = items.iter().filter(|i| i.taken.is_some());
    if taken.clone().next().is_some() {
        events.read_accounts(c, taken.map(|i| i.account_id))?;
    }
    Ok(events)
}

/// Writes the event of each SMS of the group its network took as it was stored (see
/// [`Intake::taken`]): the move's `sms.mt.status_update`, with the whole SMS object
/// for the accounts that receive it and the SMS's `hash` and `status` for the others, as
/// the SMS worker writes its moves' ([`StatusEvents`]).
fn queue_taken(
    c: &mut dyn Conn,
    results: &[Option<Result<Stored, AppError>>],
    mut events: StatusEvents,
) -> Result<(), AppError> {
    let taken: Vec<&Sms> = results
        .iter()
        .filter_map(|r| match r {
            Some(Ok(Stored::Sms(sms))) if sms.status == SmsStatus::Pending.as_str() => {
                Some(sms.as_ref())
            }
            _ => None,
        })
        .collect();
    if taken.is_empty() {
        return Ok(());
    }
    for sms in taken {
        events.queue(c, sms, sms.updated)?;
    }
    events.flush(c)?;
    Ok(())
}

fn new_sms(
    item: &Intake,
    from: String,
    price: Money,
    events: &StatusEvents,
    deliverable: bool,
) -> NewSms {
    let webhook = item.out.webhook_url.as_deref();
    // Planned when nothing would read the moves' events as they are made.
    let plan = item
        .taken
        .as_ref()
        .filter(|_| !events.records(item.account_id, webhook, item.now))
        .and_then(|t| t.plan(item.now, deliverable));
    let (status, next_at, history, part_ids) = match &item.taken {
        Some(timetable) => (
            SmsStatus::Pending,
            match plan {
                Some(plan) => plan.due,
                None => Some(item.now.plus_ms(timetable.0.first().map_or(0, |s| s.1))),
            },
            vec![StatusChange {
                old_status: SmsStatus::Created.as_str().to_owned(),
                new_status: SmsStatus::Pending.as_str().to_owned(),
                at: item.now,
            }],
            Some(Simulated::part_id as fn(&str, usize) -> String),
        ),
        None => (SmsStatus::Created, Some(item.now), Vec::new(), None),
    };
    NewSms {
        account_id: item.account_id,
        direction: Direction::Outbound.as_str(),
        from,
        to: item.out.to.as_str().to_owned(),
        body: item.body.clone(),
        encoding: item.encoding,
        parts: item.parts,
        traffic_type: Some(item.out.traffic_type.as_str()),
        status: status.as_str(),
        user_data: item.out.user_data.clone(),
        flash: item.out.flash,
        webhook_url: item.out.webhook_url.clone(),
        billing_debit: price,
        carrier: item.carrier.clone(),
        next_at,
        delivered_at: None,
        history,
        part_ids,
        plan_sent_at: plan.map(|p| p.sent),
        plan_queued_at: plan.and_then(|p| p.queued),
        plan_delivered_at: plan.and_then(|p| p.delivered),
    }
}

fn sender_key(from: &Sender, to: &E164) -> SenderKey {
    match from {
        Sender::Auto => SenderKey::Auto(to.country().unwrap_or_default()),
        Sender::Number(n) => SenderKey::Number(n.as_str().to_owned()),
        Sender::Alphanumeric(name) => SenderKey::Alphanumeric(name.clone()),
    }
}

/// The sender picked for an SMS that names none: the account's `number` in the destination's
/// country, else the shared sender.
fn automatic_sender(item: &Intake, number: Option<String>) -> String {
    number.unwrap_or_else(|| item.shared_sender.to_string())
}

/// The sender an SMS leaves with, or why the account may not use the one asked for (the
/// outer error is the database's).
fn resolve_sender(
    c: &mut dyn Conn,
    item: &Intake,
    key: &SenderKey,
) -> Result<Result<String, AppError>, DbError> {
    Ok(match key {
        SenderKey::Auto(country) => Ok(automatic_sender(
            item,
            store::number_in_country(c, item.account_id, country)?,
        )),
        SenderKey::Number(n) => {
            if owned::get(c, item.account_id, n)?.is_some() {
                Ok(n.clone())
            } else {
                Err(AppError::new(
                    ErrorCode::SenderNotApproved,
                    format!("{n} is not one of the account's numbers"),
                ))
            }
        }
        SenderKey::Alphanumeric(name) => {
            if name == ALWAYS_ALLOWED_SENDER
                || store::sender_approved(c, item.account_id, item.parent_id, name)?
            {
                Ok(name.clone())
            } else {
                Err(AppError::new(
                    ErrorCode::SenderNotApproved,
                    format!("the sender {name:?} needs the operator's approval"),
                ))
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::{PLANNABLE_ACCOUNTS_MAX, plannable_accounts};

    #[test]
    fn a_group_plans_the_deliveries_of_a_bounded_number_of_accounts() {
        let few = plannable_accounts([7, 3, 7, 5].into_iter());
        assert_eq!(few, [3, 5, 7]);
        let many = plannable_accounts((1..=40).rev().chain(1..=40));
        assert_eq!(many.len(), PLANNABLE_ACCOUNTS_MAX);
        assert_eq!(many, (1..=32).collect::<Vec<i64>>());
    }
}
