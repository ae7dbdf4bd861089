//! What every handler and worker shares.

use std::sync::Arc;

use dialtone_carrier::{Carrier, Simulated};
use dialtone_domain::Clock;
use dialtone_store::Store;
use tokio::sync::Notify;

use crate::Config;
use crate::metrics::Metrics;

/// Shared state of a running server; cheap to clone.
#[derive(Clone)]
pub struct AppState {
    /// The database.
    pub store: Store,
    /// The injected clock.
    pub clock: Arc<dyn Clock>,
    /// The configuration this process started with.
    pub config: Arc<Config>,
    /// Prometheus metrics.
    pub metrics: Arc<Metrics>,
    /// The network outbound SMS leave through.
    pub carrier: Arc<dyn Carrier>,
    /// The networks behind `carrier`: the SMPP connectors and their routes.
    pub networks: Arc<crate::networks::Networks>,
    /// The simulated network, when it is the one in use (enables `/sandbox`).
    pub simulated: Option<Arc<Simulated>>,
    /// Wakes the background workers when new work is committed.
    pub wake: Arc<Notify>,
    /// HTTP client of webhook deliveries.
    pub http: reqwest::Client,
    /// HTTP client of scenario fetches (no redirects).
    pub fetch_http: reqwest::Client,
    /// Threads that run the scenario interpreter.
    pub engine: crate::scenarios::Engine,
    /// Scenario scripts kept parsed.
    pub parsed: Arc<crate::scenarios::ParsedCache>,
    /// Per-account request rate limits of this node.
    pub limiter: Arc<crate::http::rate_limit::RateLimiter>,
}
