//! `GET /console/events`: the account's events as server-sent events, for the console's
//! live updates. The stream reads the account's events table from where it left off (the
//! `Last-Event-ID` the browser sends back when it reconnects, else from now), every half
//! second, so it sees what every node of the database recorded; it ends after five minutes
//! (the browser reconnects) and an account holds at most a few streams per node.

use std::convert::Infallible;
use std::time::Duration;

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, Sse};
use dialtone_store::events;
use futures_util::stream::{self, Stream};

use crate::error::{AppError, AppResult, ErrorCode};
use crate::http::console_session;
use crate::state::AppState;

/// How often a stream looks for new events.
const POLL: Duration = Duration::from_millis(500);
/// How long one stream lasts before the browser reconnects.
const LIFETIME: Duration = Duration::from_secs(300);
/// Events sent per poll at most.
const BATCH: i64 = 100;

struct Feed {
    state: AppState,
    account: i64,
    position: i64,
    pending: std::collections::VecDeque<Event>,
    ends: tokio::time::Instant,
    _slot: crate::http::feed_slots::FeedSlot,
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
    let position = match resume {
        Some(p) => p,
        None => {
            state
                .store
                .read(move |c| events::last_position(c, account))
                .await?
        }
    };
    let feed = Feed {
        state,
        account,
        position,
        pending: std::collections::VecDeque::new(),
        ends: tokio::time::Instant::now() + LIFETIME,
        _slot: slot,
    };
    let stream = stream::unfold(feed, |mut feed| async move {
        loop {
            if let Some(event) = feed.pending.pop_front() {
                return Some((Ok(event), feed));
            }
            if tokio::time::Instant::now() >= feed.ends {
                return None;
            }
            tokio::time::sleep(POLL).await;
            let (account, after) = (feed.account, feed.position);
            let found = feed
                .state
                .store
                .read(move |c| events::after(c, account, after, BATCH))
                .await;
            match found {
                Ok(list) => {
                    for e in list {
                        feed.position = e.id;
                        let kind = serde_json::to_string(&e.event_type).unwrap_or_default();
                        let data = format!(r#"{{"type":{kind},"data":{}}}"#, e.data);
                        feed.pending.push_back(
                            Event::default()
                                .id(e.id.to_string())
                                .event("change")
                                .data(data),
                        );
                    }
                }
                Err(e) => {
                    tracing::warn!(error = %e, "console feed: reading events failed");
                    return None;
                }
            }
        }
    });
    Ok(Sse::new(stream).keep_alive(KeepAlive::new().interval(Duration::from_secs(15))))
}
