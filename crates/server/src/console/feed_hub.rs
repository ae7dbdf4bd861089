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

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

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
}

/// A feed's place at the hub: the events of its account after `position`.
pub(crate) struct Joined {
    /// Where the hub's reads go on from: every event of the account after it comes through
    /// `events`, none before it.
    pub(crate) position: i64,
    pub(crate) events: broadcast::Receiver<Arc<FeedEvent>>,
}

impl FeedHub {
    /// Joins a feed of `account`, starting the node's reader when it is the first.
    pub(crate) async fn join(&self, store: &Store, account: i64) -> Result<Joined, AppError> {
        if !self.inner.reading.swap(true, Ordering::AcqRel) {
            let inner = Arc::clone(&self.inner);
            let store = store.clone();
            tokio::spawn(async move { read_loop(inner, store).await });
        }
        let mut hub = self.inner.hub.lock().await;
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

async fn read_loop(inner: Arc<Inner>, store: Store) {
    let mut ticks = tokio::time::interval(POLL);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        if let Err(e) = read_new(&inner, &store).await {
            tracing::warn!(error = %e, "console feeds: reading new events failed");
        }
    }
}

async fn read_new(inner: &Inner, store: &Store) -> Result<usize, AppError> {
    let mut hub = inner.hub.lock().await;
    hub.feeds.retain(|_, feed| feed.receiver_count() > 0);
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
