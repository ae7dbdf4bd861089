//! What every handler and worker shares.

use std::sync::Arc;

use dialtone_domain::Clock;
use dialtone_store::Store;

use crate::Config;
use crate::metrics::Metrics;

/// Shared state of a running server: one `Arc`, so a clone (axum makes several per request)
/// is one atomic increment, not one per field.
#[derive(Clone)]
pub struct AppState(Arc<Shared>);

impl AppState {
    /// Wraps the parts every handler and worker shares.
    pub fn new(shared: Shared) -> Self {
        Self(Arc::new(shared))
    }

    /// A reference that does not keep the state alive (for what the state itself holds,
    /// such as the SIP network's view of the platform).
    pub(crate) fn downgrade(&self) -> std::sync::Weak<Shared> {
        Arc::downgrade(&self.0)
    }

    /// The state a [`AppState::downgrade`] refers to, while it lives.
    pub(crate) fn upgrade(weak: &std::sync::Weak<Shared>) -> Option<Self> {
        weak.upgrade().map(Self)
    }
}

impl std::ops::Deref for AppState {
    type Target = Shared;

    fn deref(&self) -> &Shared {
        &self.0
    }
}

/// What [`AppState`] holds.
pub struct Shared {
    /// The database.
    pub store: Store,
    /// The injected clock.
    pub clock: Arc<dyn Clock>,
    /// The configuration this process started with.
    pub config: Arc<Config>,
    /// Prometheus metrics.
    pub metrics: Arc<Metrics>,
    /// The networks SMS leave through: the SMPP connectors, their routes, and the simulated
    /// network.
    pub networks: Arc<crate::networks::Networks>,
    /// The SMS submissions to real networks running on this node, so a test (or a stop)
    /// can wait for them to be settled.
    pub submissions: crate::tally::Tally,
    /// Wakes the background workers when new work is committed.
    pub wake: Arc<crate::wake::Wake>,
    /// Wakes the delivery worker when a try ended (its endpoint may take the next one).
    pub delivery_wake: Arc<crate::wake::Wake>,
    /// Wakes the SMS worker when an SMS to send is committed.
    pub sms_wake: Arc<crate::wake::Wake>,
    /// Sizes the SMS worker's transactions by the load on the writer.
    pub sms_pacing: crate::sms::pacing::Pacing,
    /// Stores the SMS sent at the same time together (see `sms::intake`).
    pub(crate) sms_intake: dialtone_store::coalesce::Coalescer<crate::sms::intake::Intake>,
    /// Creates the runs started through the API at the same time together (see
    /// `scenarios::runs`).
    pub(crate) run_starts: dialtone_store::coalesce::Coalescer<crate::scenarios::runs::ApiStart>,
    /// Saves together the steps of runs that change nothing but their run (see
    /// `scenarios::saves`).
    pub(crate) step_saves: dialtone_store::coalesce::Coalescer<crate::scenarios::saves::LoneSave>,
    /// The SMS this node knows to be due, claimed by id (see `sms::due_hints`).
    pub(crate) sms_hints: Arc<crate::sms::due_hints::DueHints>,
    /// HTTP client of webhook deliveries.
    pub http: reqwest::Client,
    /// The webhook tries in flight on this node, by account and endpoint.
    pub deliveries: crate::webhooks::dispatch::Dispatch,
    /// Where ended tries go to be recorded (started with the first).
    pub delivery_recorder: std::sync::OnceLock<
        tokio::sync::mpsc::UnboundedSender<crate::webhooks::recorded_try::RecordedTry>,
    >,
    /// HTTP client of scenario fetches (no redirects).
    pub fetch_http: reqwest::Client,
    /// Where webhooks and fetches may go (both clients resolve names through it).
    pub outbound: Arc<crate::outbound::Outbound>,
    /// The audio conversions running on this node, by account.
    pub conversions: crate::share::Share,
    /// The transcriptions running on this node, by account.
    pub transcriptions: crate::share::Share,
    /// When the next retention pass may run (Unix ms).
    pub next_prune: std::sync::atomic::AtomicI64,
    /// The runs the runs worker drives on this node, by account.
    pub runs: crate::share::Share,
    /// Threads that run the scenario interpreter.
    pub engine: crate::scenarios::Engine,
    /// Scenario scripts kept parsed.
    pub parsed: Arc<crate::scenarios::ParsedCache>,
    /// Scenarios this node read lately, for runs started without reading them again.
    pub(crate) known_scenarios: Arc<crate::scenarios::known::KnownScenarios>,
    /// The rate table in memory (every SMS is priced).
    pub rates: Arc<dialtone_store::rates::RateCache>,
    /// The accounts behind API keys, in memory while no account's settings changed (every
    /// request authenticates).
    pub keys: Arc<dialtone_store::key_cache::KeyCache>,
    /// Per-account request rate limits of this node.
    pub limiter: Arc<crate::http::rate_limit::RateLimiter>,
    /// Password checks a few at a time, and failed authentications per client address.
    pub auth_guard: crate::http::guard::AuthGuard,
    /// Text spoken on calls (synthesized, cached).
    pub(crate) speech: Arc<crate::speech::Speech>,
    /// The console's live feeds open per account.
    pub(crate) feeds: crate::http::feed_slots::FeedSlots,
    /// The node's one reader of new events for the console's live feeds.
    pub(crate) feed_hub: crate::console::feed_hub::FeedHub,
}
