//! Billing use cases: top-ups, monthly number fees, and the rate table.

pub(crate) mod rates;

use dialtone_domain::{Money, Sid};
use dialtone_store::billing::{self, Spend};
use dialtone_store::numbers::owned;
use dialtone_store::{accounts, events};

use crate::error::{AppError, AppResult};
use crate::state::AppState;

/// Tops up an account (operator action); emits `billing.credit`. Returns the new balance.
pub(crate) async fn top_up(state: &AppState, sid: Sid, amount: Money) -> AppResult<Money> {
    if amount <= Money::ZERO {
        return Err(AppError::invalid(
            "amount",
            "must be a positive amount in cents",
        ));
    }
    let now = state.clock.now();
    let balance = state
        .store
        .write(move |c| {
            let account =
                accounts::by_sid(c, &sid)?.ok_or_else(|| AppError::not_found("account"))?;
            accounts::lock(c, account.id)?;
            billing::top_up(c, account.id, amount, "operator top-up", now)?
                .ok_or_else(|| AppError::invalid("amount", "the balance cannot hold this amount"))
        })
        .await?;
    state.wake.notify_one();
    Ok(balance)
}

/// Most fees charged per tick.
const BATCH: i64 = 500;

/// Charges the monthly fee of every number whose contract day has come and extends it by a
/// month; a fee that cannot be paid ends the contract (the number is released and
/// `did.unassigned` emitted). Returns how many numbers were handled.
pub(crate) async fn charge_monthly_fees(state: &AppState) -> anyhow::Result<usize> {
    let now = state.clock.now();
    let handled = state
        .store
        .background()
        .write_repeatable(move |c| {
            let due = billing::due_fees(c, now, BATCH)?;
            for fee in &due {
                accounts::lock(c, fee.account_id)?;
                let spend = billing::debit(
                    c,
                    fee.account_id,
                    fee.monthly_price,
                    "number-monthly",
                    &fee.e164,
                    now,
                )?;
                match spend {
                    Spend::Done { .. } => {
                        billing::extend(c, fee.number_id, fee.paid_until.plus_months(1))?
                    }
                    Spend::Insufficient { .. } => {
                        if let Some(n) = owned::release(c, fee.account_id, &fee.e164)? {
                            let data = crate::numbers::legacy::did(&n).to_string();
                            events::emit(c, fee.account_id, "did.unassigned", &data, now)?;
                        }
                    }
                }
            }
            Ok::<_, dialtone_store::DbError>(due.len())
        })
        .await?;
    Ok(handled)
}
