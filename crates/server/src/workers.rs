//! Background work: every kind of due job, claimed in the database so that several nodes
//! (and a restarted node) never lose or double it. `tick` runs each kind once and says how
//! much it did; tests call it directly after moving the clock. Production runs the SMS
//! worker in a loop of its own beside a loop over the other kinds, so the SMS status moves
//! (four per SMS on the simulated network, the bulk of the background writes) do not wait
//! for the other kinds' commits, and theirs do not wait for the SMS moves.

use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use dialtone_store::numbers::reservations;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::state::AppState;

/// Most items of one kind handled per tick.
const BATCH: i64 = 500;

/// The minute of the last purge of expired idempotency keys (per process).
static PURGED_MINUTE: AtomicI64 = AtomicI64::new(i64::MIN);

/// Runs every kind of due work once; returns how many items were handled.
pub async fn tick(state: &AppState) -> anyhow::Result<usize> {
    let sms = crate::sms::progress::tick(state).await?;
    Ok(sms + tick_but_sms(state).await?)
}

/// Every kind of due work but the SMS worker's, once.
async fn tick_but_sms(state: &AppState) -> anyhow::Result<usize> {
    let now = state.clock.now();
    let expired = state
        .store
        .write(move |c| reservations::expire_due(c, now, BATCH))
        .await?;
    let fees = crate::billing::charge_monthly_fees(state).await?;
    let delivered = crate::webhooks::delivery::tick(state).await?;
    let runs = crate::scenarios::worker::tick(state).await?;
    let tasks = crate::tasks::tick(state).await?;
    let converted = crate::media::conversion::tick(state).await?;
    let receipts = crate::sms::receipts::sweep(state).await?;
    // Housekeeping, not a hot path: expired keys are refused by `begin` anyway, so the purge
    // runs at most once a minute instead of on every tick.
    let minute = now.millis() / 60_000;
    let forgotten = if PURGED_MINUTE.swap(minute, Ordering::Relaxed) == minute {
        0
    } else {
        state
            .store
            .write(move |c| dialtone_store::idempotency::purge(c, now, BATCH))
            .await?
    };
    Ok(expired + fees + delivered + runs + tasks + converted + receipts + forgotten as usize)
}

/// Runs the background work until `shutdown` is cancelled: the SMS worker and the other
/// kinds in two loops, each pausing when it has nothing to do. A tick in progress always
/// finishes: shutdown happens between ticks, at a safe point.
pub async fn run(state: AppState, shutdown: CancellationToken, idle: Duration) {
    let st = &state;
    let sms = repeat(&shutdown, idle, &state.sms_wake, || async move {
        let moved = crate::sms::progress::tick(st).await?;
        if moved > 0 {
            // Their events wait for the delivery worker, an inbound SMS for the runs worker.
            st.wake.notify_one();
        }
        Ok(moved)
    });
    let others = repeat(&shutdown, idle, &state.wake, || tick_but_sms(st));
    tokio::join!(sms, others);
}

/// Loops over `tick` until `shutdown` is cancelled, at once while it finds work, else after
/// `idle` or when `wake` is notified.
async fn repeat<F, Fut>(shutdown: &CancellationToken, idle: Duration, wake: &Notify, mut tick: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = anyhow::Result<usize>>,
{
    loop {
        let handled = match tick().await {
            Ok(n) => n,
            Err(e) => {
                tracing::error!(error = %e, "background work failed; retrying");
                0
            }
        };
        if handled > 0 {
            continue;
        }
        tokio::select! {
            () = shutdown.cancelled() => return,
            () = tokio::time::sleep(idle) => {}
            () = wake.notified() => {}
        }
    }
}
