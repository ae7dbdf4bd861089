//! `GET /console/events`: the account's events as server-sent events, for the console's
//! live updates. The node's one reader ([`FeedHub`](super::feed_hub::FeedHub)) reads every
//! node's new events every half second and hands each stream its account's; a stream that
//! resumes (the `Last-Event-ID` the browser sends back when it reconnects) first reads what
//! it missed, from at most a window back (the newest of it when it missed more than it may
//! hold). A stream ends after five minutes (the browser
//! reconnects) and an account holds at most a few streams per node.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, Sse};
use dialtone_store::events;
use futures_util::stream::{self, Stream};
use tokio::sync::broadcast;

use super::feed_hub;

use crate::error::{AppError, AppResult, ErrorCode};
use crate::http::console_session;
use crate::state::AppState;

/// How long one stream lasts before the browser reconnects.
const LIFETIME: Duration = Duration::from_secs(300);

struct Feed {
    account: i64,
    position: i64,
    events: broadcast::Receiver<Arc<events::FeedEvent>>,
    pending: VecDeque<Event>,
    ends: tokio::time::Instant,
    _slot: crate::http::feed_slots::FeedSlot,
}

impl Feed {
    /// Queues `event` unless the stream sent it already.
    fn queue(&mut self, event: &events::FeedEvent) {
        if event.id <= self.position {
            return;
        }
        self.position = event.id;
        let kind = serde_json::to_string(&event.event_type).unwrap_or_default();
        let data = format!(r#"{{"type":{kind},"data":{}}}"#, event.data);
        self.pending.push_back(
            Event::default()
                .id(event.id.to_string())
                .event("change")
                .data(data),
        );
    }
}

/// The stream of the session's account (cookie only: `EventSource` sends no headers, and
/// the stream only reads).
pub(super) async fn events_stream(
    State(state): State<AppState>,
    headers: HeaderMap,
) -> AppResult<Sse<impl Stream<Item = Result<Event, Infallible>>>> {
    let signed_in = console_session::find(&state, &headers)
        .await?
        .ok_or_else(|| AppError::auth("not signed in"))?;
    let account = signed_in
        .session
        .account_id
        .ok_or_else(|| AppError::not_found("feed (the operator's session has none)"))?;
    let slot = state.feeds.take(account).ok_or_else(|| {
        AppError::new(
            ErrorCode::RateLimited,
            "too many live feeds open for this account",
        )
    })?;
    let resume = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<i64>().ok())
        .filter(|p| *p >= 0);
    let joined = state
        .feed_hub
        .join(&state.store, &state.clock, account)
        .await?;
    let mut feed = Feed {
        account,
        position: joined.position,
        events: joined.events,
        pending: VecDeque::new(),
        ends: tokio::time::Instant::now() + LIFETIME,
        _slot: slot,
    };
    if let Some(resumed) = resume.filter(|p| *p < joined.position) {
        // What it missed since, from at most a window back; the hub brings what follows.
        let (upto, accounts) = (joined.position, [account]);
        let from = resumed.max(upto - feed_hub::WINDOW);
        let missed = state
            .store
            .read(move |c| events::among(c, from, upto, &accounts, feed_hub::BACKLOG))
            .await?;
        feed.position = from;
        for event in &missed {
            feed.queue(event);
        }
        feed.position = upto;
    }
    let stream = stream::unfold(feed, |mut feed| async move {
        loop {
            if let Some(event) = feed.pending.pop_front() {
                return Some((Ok(event), feed));
            }
            let next = tokio::time::timeout_at(feed.ends, feed.events.recv()).await;
            match next {
                Ok(Ok(event)) => feed.queue(&event),
                // Too slow to read: the oldest were dropped. The console redraws on the
                // next change anyway.
                Ok(Err(broadcast::error::RecvError::Lagged(skipped))) => {
                    tracing::debug!(account = feed.account, skipped, "console feed lagged");
                }
                Ok(Err(broadcast::error::RecvError::Closed)) | Err(_) => return None,
            }
        }
    });
    Ok(Sse::new(stream).keep_alive(KeepAlive::new().interval(Duration::from_secs(15))))
}
