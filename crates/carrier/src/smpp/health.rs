//! What an operator needs to know of each bind: up or down, and when down, why (the last
//! error), since when, and when the connector tries again.

use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::Serialize;

/// The state of one bind of a connector, as `GET /admin/smpp` shows it. Times are Unix
/// milliseconds of the wall clock.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BindHealth {
    /// `transceiver`, `transmitter` or `receiver`.
    pub kind: &'static str,
    /// Bound now.
    pub bound: bool,
    /// Since when it is bound, or since when it is down.
    pub since: Option<i64>,
    /// The last reason it went down or could not bind.
    pub last_error: Option<String>,
    /// When that was.
    pub last_error_at: Option<i64>,
    /// When it binds again (while down).
    pub next_attempt_at: Option<i64>,
    /// Failed bind attempts in a row.
    pub failures: u32,
}

/// Unix milliseconds of the wall clock, `after` from now.
fn wall_ms(after: Duration) -> i64 {
    SystemTime::now()
        .checked_add(after)
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// The health of one bind, updated by the task that keeps it up.
#[derive(Debug)]
pub(crate) struct Health(Mutex<BindHealth>);

impl Health {
    pub(crate) fn new(kind: &'static str) -> Self {
        Self(Mutex::new(BindHealth {
            kind,
            since: Some(wall_ms(Duration::ZERO)),
            ..BindHealth::default()
        }))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BindHealth> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A copy of what is known now.
    pub(crate) fn get(&self) -> BindHealth {
        self.lock().clone()
    }

    /// The bind is up.
    pub(crate) fn bound(&self) {
        let mut h = self.lock();
        h.bound = true;
        h.since = Some(wall_ms(Duration::ZERO));
        h.next_attempt_at = None;
        h.failures = 0;
    }

    /// The bind went down, or an attempt failed, for `error`; the next attempt is in `retry`.
    pub(crate) fn down(&self, error: String, retry: Duration) {
        let mut h = self.lock();
        if h.bound {
            h.since = Some(wall_ms(Duration::ZERO));
        } else {
            h.failures = h.failures.saturating_add(1);
        }
        h.bound = false;
        h.last_error = Some(error);
        h.last_error_at = Some(wall_ms(Duration::ZERO));
        h.next_attempt_at = Some(wall_ms(retry));
    }
}
