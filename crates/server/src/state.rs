//! What every handler and worker shares.

use std::sync::Arc;

use dialtone_domain::Clock;
use dialtone_store::Store;

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
}
