//! The number lifecycle as use cases: reserve, buy, cancel, release, attach. Each runs in one
//! transaction with the events it causes (`did.assigned`, `did.unassigned`).

pub(crate) mod inventory;
pub(crate) mod legacy;

use dialtone_domain::account::AccountStatus;
use dialtone_domain::{Money, Sid};
use dialtone_store::numbers::reservations::{self, Reservation, Reserved, Wanted, status};
use dialtone_store::numbers::{Number, owned};
use dialtone_store::{accounts, billing, events};
use rand::Rng;

use crate::error::{AppError, AppResult, ErrorCode};
use crate::state::AppState;

/// How long a reservation holds its numbers: 5 minutes.
pub(crate) const HOLD_MS: i64 = 5 * 60 * 1000;

/// A new reservation token: 48 URL-safe characters.
pub(crate) fn new_token() -> String {
    const ALPHABET: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz-_";
    let mut rng = rand::rng();
    (0..48)
        .map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())] as char)
        .collect()
}

/// Reservations an account may let lapse (expire or cancel) in an hour before it may hold
/// no more for the rest of it: a hold is 5 minutes, so numbers cannot be kept from others
/// by reserving them again and again.
pub(crate) const UNBOUGHT_PER_HOUR: i64 = 3;

/// Reserves numbers for the account: it must have the credit to buy what it holds (setup and
/// first month), and not have let [`UNBOUGHT_PER_HOUR`] reservations lapse in the last hour.
pub(crate) async fn reserve(
    state: &AppState,
    account_id: i64,
    wanted: Wanted,
) -> AppResult<Reservation> {
    let (now, token) = (state.clock.now(), new_token());
    state
        .store
        .write(move |c| {
            let lapsed = reservations::unbought_since(c, account_id, now.plus_ms(-3_600_000))?;
            if lapsed >= UNBOUGHT_PER_HOUR {
                return Err(AppError::too_many(
                    ErrorCode::RateLimited,
                    format!(
                        "{lapsed} reservations lapsed unbought in the last hour: buy what you reserve, or wait"
                    ),
                    3_600,
                ));
            }
            let offered = dialtone_store::numbers::inventory::types(c, &wanted.country)?;
            if !offered.iter().any(|(t, _)| *t == wanted.number_type) {
                return Err(AppError::not_found(&format!(
                    "{} numbers in country {}",
                    wanted.number_type, wanted.country
                )));
            }
            match reservations::reserve(c, account_id, &wanted, &token, now, HOLD_MS)? {
                Reserved::Held(r) => {
                    let account = dialtone_store::accounts::by_id(c, account_id)?
                        .ok_or_else(|| AppError::not_found("account"))?;
                    let cost = r
                        .setup_total
                        .checked_add(r.monthly_total)
                        .unwrap_or(Money::from_units(i64::MAX));
                    let balance = dialtone_store::billing::balance(c, account_id)?;
                    let prepaid = account.billing_mode == dialtone_domain::account::BillingMode::Prepaid;
                    if prepaid && balance < cost {
                        // The write is undone: nothing stays held.
                        return Err(AppError::new(
                            ErrorCode::InsufficientCredit,
                            format!("these numbers cost {cost} cents to buy; the credit is {balance} cents"),
                        ));
                    }
                    Ok(r)
                }
                Reserved::AlreadyHolding => Err(AppError::new(
                    ErrorCode::ReservationExists,
                    "the account already holds a reservation: buy or cancel it first",
                )),
                Reserved::NotAvailable { found } => Err(AppError::new(
                    ErrorCode::NumberNotAvailable,
                    format!(
                        "only {found} matching numbers are available, {} asked for",
                        wanted.quantity
                    ),
                )),
            }
        })
        .await
}

/// The account's reservation, expired first if its hold has ended.
pub(crate) async fn reservation(
    state: &AppState,
    account_id: i64,
    token: String,
) -> AppResult<Reservation> {
    let now = state.clock.now();
    state
        .store
        .write(move |c| reservations::get_current(c, account_id, &token, now))
        .await?
        .ok_or_else(|| AppError::not_found("reservation"))
}

/// Buys a held reservation: debits setup and first month, gives the numbers to the account.
pub(crate) async fn buy(
    state: &AppState,
    account_id: i64,
    token: String,
) -> AppResult<(Vec<Number>, Money)> {
    let now = state.clock.now();
    state
        .store
        .write(move |c| {
            accounts::lock(c, account_id)?;
            let r = reservations::get_current(c, account_id, &token, now)?
                .ok_or_else(|| AppError::not_found("reservation"))?;
            match r.status.as_str() {
                status::RESERVED => {}
                status::BOUGHT => {
                    return Err(AppError::invalid(
                        "token",
                        "this reservation was already bought",
                    ));
                }
                other => {
                    return Err(AppError::new(
                        ErrorCode::ReservationExpired,
                        format!("this reservation is {other}: reserve again"),
                    ));
                }
            }
            let account =
                accounts::by_id(c, account_id)?.ok_or_else(|| AppError::not_found("account"))?;
            if account.status == AccountStatus::Suspended {
                return Err(AppError::new(
                    ErrorCode::AccountSuspended,
                    "the account is suspended",
                ));
            }
            let debit = r
                .setup_total
                .checked_add(r.monthly_total)
                .ok_or_else(|| AppError::internal("price overflow"))?;
            if debit > Money::ZERO
                && let billing::Spend::Insufficient { balance } = billing::debit(
                    c,
                    account_id,
                    debit,
                    "number-purchase",
                    &format!("reservation {}", r.token),
                    now,
                )?
            {
                return Err(AppError::new(
                    ErrorCode::InsufficientCredit,
                    format!("buying costs {debit} cents; the credit is {balance} cents"),
                ));
            }
            // Failing here undoes the debit: the reservation was cancelled or expired by
            // another session since it was read.
            let numbers =
                reservations::complete_purchase(c, account_id, &r, now, now.plus_months(1))?
                    .ok_or_else(|| {
                        AppError::new(
                            ErrorCode::ReservationExpired,
                            "this reservation is no longer held: reserve again",
                        )
                    })?;
            for n in &numbers {
                events::emit(
                    c,
                    account_id,
                    "did.assigned",
                    &legacy::did(n).to_string(),
                    now,
                )?;
            }
            Ok((numbers, debit))
        })
        .await
}

/// Cancels a held reservation.
pub(crate) async fn cancel(state: &AppState, account_id: i64, token: String) -> AppResult<()> {
    let now = state.clock.now();
    state
        .store
        .write(move |c| {
            let r = reservations::get_current(c, account_id, &token, now)?
                .ok_or_else(|| AppError::not_found("reservation"))?;
            if r.status == status::RESERVED && reservations::cancel(c, r.id, now)? {
                return Ok(());
            }
            // Not held, or not any more: a purchase or the expiry came first meanwhile (on
            // PostgreSQL the cancel waited for it; a new read sees what it made).
            let current = match r.status.as_str() {
                status::RESERVED => reservations::get(c, account_id, &token)?
                    .map_or_else(|| r.status.clone(), |again| again.status),
                _ => r.status.clone(),
            };
            Err(match current.as_str() {
                status::BOUGHT => AppError::invalid(
                    "token",
                    "this reservation was bought: release the numbers instead",
                ),
                other => AppError::new(
                    ErrorCode::ReservationExpired,
                    format!("this reservation is already {other}"),
                ),
            })
        })
        .await
}

/// Releases one of the account's numbers at once.
pub(crate) async fn release(state: &AppState, account_id: i64, e164: String) -> AppResult<()> {
    let now = state.clock.now();
    state
        .store
        .write(move |c| {
            let number = owned::release(c, account_id, &e164)?
                .ok_or_else(|| AppError::not_found("number"))?;
            events::emit(
                c,
                account_id,
                "did.unassigned",
                &legacy::did(&number).to_string(),
                now,
            )?;
            Ok(())
        })
        .await
}

/// Sets or clears a number's scenario and/or end user (None leaves that link alone).
pub(crate) async fn attach(
    state: &AppState,
    account_id: i64,
    e164: String,
    scenario: Option<Option<Sid>>,
    end_user: Option<Option<Sid>>,
) -> AppResult<()> {
    state
        .store
        .write(move |c| {
            owned::get(c, account_id, &e164)?.ok_or_else(|| AppError::not_found("number"))?;
            if let Some(s) = &scenario
                && owned::set_scenario(c, account_id, &e164, s.as_ref())? == owned::Attach::NoTarget
            {
                return Err(AppError::not_found("scenario"));
            }
            if let Some(u) = &end_user
                && owned::set_end_user(c, account_id, &e164, u.as_ref())? == owned::Attach::NoTarget
            {
                return Err(AppError::not_found("end user"));
            }
            Ok(())
        })
        .await
}
