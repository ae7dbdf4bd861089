//! A request body has one deadline for the whole of it, counted from the start of the
//! request: a client that sends a byte now and then cannot hold its connection (and the
//! handler waiting for the body) forever, as a timeout restarted at every frame would let it.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use http_body::{Frame, SizeHint};
use tokio::time::{Instant, Sleep};

use crate::state::AppState;

/// The body of a request with its deadline.
struct DeadlineBody {
    inner: Body,
    deadline: Pin<Box<Sleep>>,
}

impl http_body::Body for DeadlineBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        if self.deadline.as_mut().poll(cx).is_ready() {
            return Poll::Ready(Some(Err(axum::Error::new(
                "the request body did not arrive in time",
            ))));
        }
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// Gives every request body the deadline `--body-timeout` from now.
pub(crate) async fn deadline(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let limit = Duration::from_millis(state.config.body_timeout_ms);
    let deadline = Box::pin(tokio::time::sleep_until(Instant::now() + limit));
    let req = req.map(|inner| Body::new(DeadlineBody { inner, deadline }));
    next.run(req).await
}
