//! One reader a node for every live feed the console holds open: every half second it reads
//! the events recorded since its last read, by their key, and hands each open feed its
//! account's. Events have no index by account (migration 0032): a feed reading its own
//! account's would scan every account's new events, once per feed.
//!
//! Bounds: a read covers at most [`WINDOW`] positions, the newest, and hands out at most the
//! newest [`PER_READ`] events among them: under a flood the feeds skip ahead rather than fall
//! behind (a feed tells the console that something changed, and the console then reads its
//! lists). Each feed holds at most [`BACKLOG`] events it has not sent; a slower one skips
//! the oldest. The reader reads the
//! database only while a feed is open, and hands out only the events of the accounts with
//! one.
//!
//! Watches: an event that no subscription and no per-SMS webhook receives is written only
//! while a feed watches its account (`events::Outbox`, migration 0037). A feed joining
//! writes its account's watch before it takes its place in the reads, and the reader renews
//! the watches of the open feeds' accounts; a watch outlasts its feed by [`WATCH`] at most,
//! so a stream that ends and reconnects (every five minutes, or after a network blip) finds
//! what it missed recorded.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use dialtone_domain::Timestamp;
use dialtone_domain::clock::Clock;
use dialtone_store::Store;
use dialtone_store::events::{self, FeedEvent};
use tokio::sync::{Mutex, broadcast};

use crate::error::AppError;

/// How often the reader looks for new events.
const POLL: Duration = Duration::from_millis(500);
/// Positions one read covers at most: it reads every account's events among them.
pub(crate) const WINDOW: i64 = 20_000;
/// Events one read hands out at most: the newest of its window.
const PER_READ: usize = 1_000;
/// Events a feed may hold unsent before it skips the oldest.
pub(crate) const BACKLOG: usize = 256;
/// How long a watch lasts past its last renewal, in milliseconds: longer than a stream (five
/// minutes) and the browser's reconnection after it. Renewed once half of it is left.
pub(crate) const WATCH: i64 = 10 * 60 * 1000;

/// The node's reader of new events and the feeds it serves. Cheap to clone.
#[derive(Clone, Default)]
pub(crate) struct FeedHub {
    inner: Arc<Inner>,
}

#[derive(Default)]
struct Inner {
    /// Held across a read, so that a feed joining meanwhile starts where it ends.
    hub: Mutex<Hub>,
    reading: AtomicBool,
}

#[derive(Default)]
struct Hub {
    /// Events up to this position were read and handed out; None while no feed is open
    /// (the next feed starts from the newest event).
    position: Option<i64>,
    /// The open feeds' channels, by account.
    feeds: HashMap<i64, broadcast::Sender<Arc<FeedEvent>>>,
    /// Until when this node last wrote each open feed's account's watch.
    watches: HashMap<i64, Timestamp>,
}

/// A feed's place at the hub: the events of its account after `position`.
pub(crate) struct Joined {
    /// Where the hub's reads go on from: every event of the account after it comes through
    /// `events`, none before it.
    pub(crate) position: i64,
    pub(crate) events: broadcast::Receiver<Arc<FeedEvent>>,
}

impl FeedHub {
    /// Joins a feed of `account`, starting the node's reader when it is the first. The
    /// account's watch is written first: every event recorded after the feed's position is
    /// in a transaction that saw the watch or committed before it.
    pub(crate) async fn join(
        &self,
        store: &Store,
        clock: &Arc<dyn Clock>,
        account: i64,
    ) -> Result<Joined, AppError> {
        if !self.inner.reading.swap(true, Ordering::AcqRel) {
            let inner = Arc::clone(&self.inner);
            let store = store.clone();
            let clock = Arc::clone(clock);
            tokio::spawn(async move { read_loop(inner, store, clock).await });
        }
        let now = clock.now();
        let until = now.plus_ms(WATCH);
        // A watch that starts: the account's deliveries planned to come are written by the
        // worker again, with their events, and the feed shows them. While a watch lasts
        // nothing is planned, so a feed joining it has nothing to look for.
        store
            .write(move |c| {
                let starts = events::watched_until(c, account)?.is_none_or(|u| u <= now);
                events::watch(c, account, until)?;
                if starts {
                    dialtone_store::sms::unplan_deliveries(c, account, now)?;
                }
                Ok::<_, dialtone_store::DbError>(())
            })
            .await?;
        let mut hub = self.inner.hub.lock().await;
        let watched = hub.watches.entry(account).or_insert(until);
        *watched = (*watched).max(until);
        let position = match hub.position {
            Some(p) => p,
            None => {
                let newest = store.read(events::newest_position).await?;
                *hub.position.insert(newest)
            }
        };
        let events = hub
            .feeds
            .entry(account)
            .or_insert_with(|| broadcast::channel(BACKLOG).0)
            .subscribe();
        Ok(Joined { position, events })
    }
}

async fn read_loop(inner: Arc<Inner>, store: Store, clock: Arc<dyn Clock>) {
    let mut ticks = tokio::time::interval(POLL);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        if let Err(e) = read_new(&inner, &store, clock.now()).await {
            tracing::warn!(error = %e, "console feeds: reading new events failed");
        }
    }
}

async fn read_new(inner: &Inner, store: &Store, now: Timestamp) -> Result<usize, AppError> {
    let mut hub = inner.hub.lock().await;
    hub.feeds.retain(|_, feed| feed.receiver_count() > 0);
    let Hub { feeds, watches, .. } = &mut *hub;
    watches.retain(|account, _| feeds.contains_key(account));
    renew_watches(store, watches, now).await?;
    let Some(after) = hub.position else {
        return Ok(0);
    };
    if hub.feeds.is_empty() {
        hub.position = None;
        return Ok(0);
    }
    let accounts: Vec<i64> = hub.feeds.keys().copied().collect();
    let (found, upto) = store
        .read(move |c| {
            let newest = events::newest_position(c)?;
            // Behind by more than a window: skip ahead to the last one.
            let from = after.max(newest - WINDOW);
            let found = events::among(c, from, newest, &accounts, PER_READ)?;
            Ok::<_, AppError>((found, newest.max(after)))
        })
        .await?;
    let handed = found.len();
    for event in found {
        if let Some(feed) = hub.feeds.get(&event.account_id) {
            // No receiver left: the feed closed since; nothing to do.
            let _ = feed.send(Arc::new(event));
        }
    }
    hub.position = Some(upto);
    Ok(handed)
}

/// Renews the watches of the open feeds' accounts that have half of [`WATCH`] left or less,
/// in one write.
async fn renew_watches(
    store: &Store,
    watches: &mut HashMap<i64, Timestamp>,
    now: Timestamp,
) -> Result<(), AppError> {
    let renew_at = now.plus_ms(WATCH / 2);
    let until = now.plus_ms(WATCH);
    let due: Vec<i64> = watches
        .iter()
        .filter(|(_, watched)| **watched <= renew_at)
        .map(|(account, _)| *account)
        .collect();
    if due.is_empty() {
        return Ok(());
    }
    let accounts = due.clone();
    store
        .write(move |c| {
            accounts
                .iter()
                .try_for_each(|account| events::watch(c, *account, until))
        })
        .await?;
    for account in due {
        watches.insert(account, until);
    }
    Ok(())
}
