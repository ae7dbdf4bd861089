//! Background work: every kind of due job, claimed in the database so that several nodes
//! (and a restarted node) never lose or double it. `tick` runs each kind once and says how
//! much it did; tests call it directly after moving the clock.
//!
//! Production runs each kind in a loop of its own: the SMS worker (four status moves per SMS
//! on the simulated network, the bulk of the background writes), webhook deliveries, runs,
//! tasks, audio conversions, transcriptions, and the housekeeping (expiries, monthly fees, purges, kept
//! receipts). A kind that is slow (a hanging receiver, a long fetch, a big file) or failing
//! holds up only itself: no kind waits behind another, and one kind's error never skips the
//! others.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use dialtone_store::numbers::reservations;
use tokio_util::sync::CancellationToken;

use crate::state::AppState;
use crate::wake::Wake;

/// Most items of one kind handled per tick.
const BATCH: i64 = 500;

/// The minute of the last purge of expired idempotency keys (per process).
static PURGED_MINUTE: AtomicI64 = AtomicI64::new(i64::MIN);

/// One kind of background work.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// SMS submissions and status moves.
    Sms,
    /// Webhook deliveries.
    Deliveries,
    /// Runs whose start or wait is due.
    Runs,
    /// Account tasks (exports, bulk recording changes).
    Tasks,
    /// Audio conversions.
    Conversions,
    /// Transcriptions of recordings.
    Transcriptions,
    /// Expiries, monthly fees, purges and kept receipts.
    Housekeeping,
}

impl Kind {
    /// Every kind.
    pub const ALL: [Kind; 7] = [
        Kind::Sms,
        Kind::Deliveries,
        Kind::Runs,
        Kind::Tasks,
        Kind::Conversions,
        Kind::Transcriptions,
        Kind::Housekeeping,
    ];

    fn name(self) -> &'static str {
        match self {
            Kind::Sms => "sms",
            Kind::Deliveries => "deliveries",
            Kind::Runs => "runs",
            Kind::Tasks => "tasks",
            Kind::Conversions => "conversions",
            Kind::Transcriptions => "transcriptions",
            Kind::Housekeeping => "housekeeping",
        }
    }

    /// The signal that says this kind has new work.
    fn wake(self, state: &AppState) -> &Wake {
        match self {
            Kind::Sms => &state.sms_wake,
            _ => &state.wake,
        }
    }
}

type Ticked<'a> = Pin<Box<dyn Future<Output = anyhow::Result<usize>> + Send + 'a>>;

/// Runs one kind's due work once; returns how many items were handled.
pub fn tick_kind(state: &AppState, kind: Kind) -> Ticked<'_> {
    match kind {
        Kind::Sms => Box::pin(crate::sms::progress::tick(state)),
        Kind::Deliveries => Box::pin(crate::webhooks::delivery::tick(state)),
        Kind::Runs => Box::pin(crate::scenarios::worker::tick(state)),
        Kind::Tasks => Box::pin(crate::tasks::tick(state)),
        Kind::Conversions => Box::pin(crate::media::conversion::tick(state)),
        Kind::Transcriptions => Box::pin(crate::voice::transcriptions::tick(state)),
        Kind::Housekeeping => Box::pin(housekeeping(state)),
    }
}

/// Runs every kind of due work once; returns how many items were handled. A kind that
/// fails is logged and the others still run.
pub async fn tick(state: &AppState) -> anyhow::Result<usize> {
    let mut handled = 0;
    let mut first_error = None;
    for kind in Kind::ALL {
        match tick_kind(state, kind).await {
            Ok(n) => handled += n,
            Err(e) => {
                tracing::error!(kind = kind.name(), error = %format!("{e:#}"), "background work failed");
                first_error.get_or_insert(e);
            }
        }
    }
    match first_error {
        Some(e) => Err(e),
        None => Ok(handled),
    }
}

/// Expiries, monthly fees, the purge of old idempotency keys, kept receipts.
async fn housekeeping(state: &AppState) -> anyhow::Result<usize> {
    let now = state.clock.now();
    let expired = state
        .store
        .background()
        .write_repeatable(move |c| reservations::expire_due(c, now, BATCH))
        .await?;
    let fees = crate::billing::charge_monthly_fees(state).await?;
    let receipts = crate::sms::receipts::sweep(state).await?;
    let pruned = prune(state).await?;
    // Not a hot path: expired keys are refused by `begin` anyway, so the purge runs at most
    // once a minute instead of on every tick.
    let minute = now.millis() / 60_000;
    let forgotten = if PURGED_MINUTE.swap(minute, Ordering::Relaxed) == minute {
        0
    } else {
        state
            .store
            .background()
            .write_repeatable(move |c| dialtone_store::idempotency::purge(c, now, BATCH))
            .await?
    };
    Ok(expired + fees + receipts + pruned + forgotten as usize)
}

/// Seconds between two retention passes that found nothing to prune.
const PRUNE_EVERY_MS: i64 = 10_000;

/// Deletes what is past its retention, a window at a time: at once again while a pass finds
/// work, else at most every [`PRUNE_EVERY_MS`].
async fn prune(state: &AppState) -> anyhow::Result<usize> {
    let now = state.clock.now();
    if now.millis() < state.next_prune.load(Ordering::Relaxed) {
        return Ok(0);
    }
    let config = &state.config;
    let (events, runs, exports) = (
        now.plus_ms(-config.retain_events_ms),
        now.plus_ms(-config.retain_runs_ms),
        now.plus_ms(-config.retain_exports_ms),
    );
    let pruned = state
        .store
        .background()
        .write_repeatable(move |c| dialtone_store::retention::prune(c, events, runs, exports))
        .await?;
    if pruned.total() == 0 {
        state
            .next_prune
            .store(now.millis() + PRUNE_EVERY_MS, Ordering::Relaxed);
    }
    Ok(pruned.total())
}

/// Runs the background work until `shutdown` is cancelled: each kind in a loop of its own,
/// pausing when it has nothing to do. A tick in progress always finishes: shutdown happens
/// between ticks, at a safe point.
pub async fn run(state: AppState, shutdown: CancellationToken, idle: Duration) {
    let mut loops = Vec::new();
    for kind in Kind::ALL {
        for _ in 0..loops_of(&state, kind) {
            let (state, shutdown) = (state.clone(), shutdown.clone());
            loops.push(tokio::spawn(async move {
                repeat(&state, kind, &shutdown, idle).await
            }));
        }
    }
    for handle in loops {
        let _ = handle.await;
    }
}

/// How many loops run `kind` at once. The SMS worker has two on PostgreSQL: a tick is a
/// few round trips, each of which would leave the database and this node idle with one
/// loop, and two ticks claim different SMS (`SKIP LOCKED`), as the loops of several nodes
/// do. SQLite's single writer runs one tick at a time whatever the loops.
fn loops_of(state: &AppState, kind: Kind) -> usize {
    match (kind, state.store.dialect()) {
        (Kind::Sms, dialtone_store::Dialect::Postgres) => 2,
        _ => 1,
    }
}

/// Loops over one kind until `shutdown` is cancelled, at once while it finds work, else
/// after `idle` or when its signal wakes it.
async fn repeat(state: &AppState, kind: Kind, shutdown: &CancellationToken, idle: Duration) {
    let mut woken = kind.wake(state).watch();
    // The delivery worker is also woken when one of its tries ends.
    let mut tried = state.delivery_wake.watch();
    let deliveries = kind == Kind::Deliveries;
    loop {
        let handled = match tick_kind(state, kind).await {
            Ok(n) => n,
            Err(e) => {
                tracing::error!(kind = kind.name(), error = %format!("{e:#}"), "background work failed; retrying");
                0
            }
        };
        if handled > 0 {
            if kind == Kind::Sms {
                // Their events wait for the delivery worker (an inbound SMS that starts a run
                // wakes the others: `sms::progress`). Only that worker: waking every kind
                // at each SMS tick made each of them look for work it did not have.
                state.delivery_wake.notify_one();
            }
            continue;
        }
        tokio::select! {
            () = shutdown.cancelled() => return,
            () = tokio::time::sleep(idle) => {}
            () = woken.woken() => {}
            () = tried.woken(), if deliveries => {}
        }
    }
}
