//! Building and running a server: open and migrate the store, assemble the interfaces, bind
//! the listener (port 0 picks a free one, which tests use), serve until told to stop.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use dialtone_carrier::Simulated;
use dialtone_carrier::smpp::SmppConfig;
use dialtone_domain::Clock;
use dialtone_store::coalesce::Coalescer;
use dialtone_store::{Store, StoreOptions, migrate};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::config::Config;
use crate::metrics::Metrics;
use crate::networks::{Networks, Source};
use crate::state::{AppState, Shared};
use crate::{
    admin, billing, http, jsonrpc, numbers, ops, rest11, sandbox, scenarios, v2, webhooks, workers,
};

/// A server ready to serve: store open and migrated, listeners bound.
pub struct Application {
    listener: TcpListener,
    /// HTTPS beside HTTP, with what it presents.
    https: Option<(TcpListener, crate::tls::Identity)>,
    router: Router,
    state: AppState,
}

impl Application {
    /// Opens the store, applies migrations, binds `config.listen`.
    pub async fn build(config: Config, clock: Arc<dyn Clock>) -> anyhow::Result<Self> {
        config.validate()?;
        let store = open_store(&config).await?;
        let listener = TcpListener::bind(&config.listen)
            .await
            .map_err(|e| anyhow::anyhow!("cannot listen on {}: {e}", config.listen))?;
        let https = match &config.tls {
            Some(tls) => https(tls, &config.data_dir).await?,
            None => None,
        };
        let mut config = config;
        if config.public_url.is_none()
            && let Ok(addr) = listener.local_addr()
        {
            config.public_url = Some(format!("http://{addr}"));
        }
        let simulated = config
            .simulated_network
            .then(|| Arc::new(Simulated::new(config.sim_step_ms)));
        let mut connectors: Vec<(SmppConfig, Source)> = config
            .smpp
            .iter()
            .map(|c| (c.clone(), Source::File))
            .collect();
        connectors.extend(admin_connectors(&store, &config.smpp).await?);
        let (networks, carrier_events) = Networks::start(&connectors, simulated.clone());
        let listen_addr = listener
            .local_addr()
            .map_err(|e| anyhow::anyhow!("the listener has no address: {e}"))?;
        let outbound = Arc::new(crate::outbound::Outbound::new(
            config
                .outbound_private
                .unwrap_or_else(|| crate::outbound::Outbound::default_mode(listen_addr)),
            config.outbound_allow.clone(),
            listen_addr,
        ));
        let http = webhooks::delivery::client(config.webhook_timeout_ms, &outbound);
        let state_config_failures = config.auth_failures_per_minute;
        let sms_hints = Arc::new(crate::sms::due_hints::DueHints::for_database(
            store.dialect(),
        ));
        let state = AppState::new(Shared {
            sms_intake: Coalescer::new(store.clone()),
            run_starts: Coalescer::new(store.clone()),
            step_saves: Coalescer::new(store.clone()),
            store,
            clock,
            config: Arc::new(config),
            metrics: Arc::new(Metrics::default()),
            networks,
            submissions: Default::default(),
            wake: Arc::default(),
            sms_wake: Arc::default(),
            delivery_wake: Arc::default(),
            sms_pacing: Default::default(),
            sms_hints,
            http,
            deliveries: Default::default(),
            delivery_recorder: Default::default(),
            fetch_http: scenarios::fetch::client(&outbound)?,
            outbound,
            runs: crate::share::Share::new(scenarios::worker::PER_ACCOUNT),
            next_prune: Default::default(),
            conversions: crate::share::Share::new(crate::media::conversion::PER_ACCOUNT),
            transcriptions: crate::share::Share::new(1),
            engine: scenarios::Engine::start(config_threads())?,
            parsed: Arc::new(scenarios::ParsedCache::default()),
            known_scenarios: Arc::default(),
            rates: Arc::default(),
            keys: Arc::default(),
            limiter: Arc::default(),
            auth_guard: http::guard::AuthGuard::new(config_threads(), state_config_failures),
            feeds: http::feed_slots::FeedSlots::default(),
            feed_hub: crate::console::feed_hub::FeedHub::default(),
            speech: Arc::default(),
        });
        let stored_trunks = crate::voice::sip::stored_trunks(&state).await?;
        if state.config.sip_node.is_some() || !stored_trunks.is_empty() {
            crate::voice::sip::start(&state, stored_trunks).await?;
        }
        // The routes (with the OpenAPI document) are built on another core while the
        // first start fills the inventory and rates.
        let routes = {
            let state = state.clone();
            tokio::task::spawn_blocking(move || router(state))
        };
        if state.config.default_inventory {
            numbers::inventory::load_default_if_empty(&state.store).await?;
        }
        billing::rates::load_default_if_empty(&state.store).await?;
        // Receipts and inbound SMS come when a network sends them, workers or not.
        tokio::spawn(crate::sms::carrier_events::run(
            state.clone(),
            carrier_events,
        ));
        let router = routes.await?;
        Ok(Self {
            listener,
            https,
            router,
            state,
        })
    }

    /// The HTTPS address actually bound and the certificate it presents, when HTTPS runs.
    pub fn https(&self) -> Option<(SocketAddr, &crate::tls::Identity)> {
        let (listener, identity) = self.https.as_ref()?;
        Some((listener.local_addr().ok()?, identity))
    }

    /// The address actually bound.
    pub fn local_addr(&self) -> SocketAddr {
        self.listener
            .local_addr()
            .unwrap_or_else(|_| SocketAddr::from(([127, 0, 0, 1], 0)))
    }

    /// The shared state (store, clock, config), for tests and the command line.
    pub fn state(&self) -> &AppState {
        &self.state
    }

    /// Serves until `shutdown` resolves, then stops accepting and finishes in-flight requests.
    /// Background workers run beside the server and stop at a safe point after it.
    pub async fn run_until(
        self,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> anyhow::Result<()> {
        let stop_workers = CancellationToken::new();
        let worker = self.state.config.run_workers.then(|| {
            tokio::spawn(workers::run(
                self.state.clone(),
                stop_workers.clone(),
                Duration::from_millis(50),
            ))
        });
        let header_timeout = Duration::from_millis(self.state.config.header_timeout_ms);
        let connections = http::client::Connections::new(
            self.state.config.max_connections,
            self.state.config.max_connections_per_ip,
        );
        let listeners = crate::serve::Listeners {
            http: self.listener,
            https: self.https.map(|(listener, identity)| {
                (listener, tokio_rustls::TlsAcceptor::from(identity.config))
            }),
        };
        let served = crate::serve::serve(
            listeners,
            self.router,
            header_timeout,
            connections,
            shutdown,
        )
        .await;
        stop_workers.cancel();
        if let Some(mut w) = worker {
            // The tick in progress finishes, within a bound: a tick waiting on slow webhook
            // receivers is dropped after it, which loses nothing (its leased work is taken
            // again when the leases run out, here or on another node).
            if tokio::time::timeout(crate::serve::STOP_GRACE, &mut w)
                .await
                .is_err()
            {
                tracing::warn!("background work still running at shutdown: left to its leases");
                w.abort();
            }
        }
        // Submissions in progress settle (each answers within its lease; what does not is
        // left to the lease).
        let settled = self.state.submissions.settled();
        if tokio::time::timeout(crate::serve::STOP_GRACE, settled)
            .await
            .is_err()
        {
            tracing::warn!("SMS submissions still running at shutdown: left to their leases");
        }
        // Calls in progress end with a BYE, and the SIP listeners close.
        if let Some(node) = self.state.networks.sip() {
            node.stop().await;
        }
        // Unbind politely: the SMSCs keep what they have not delivered for the next bind.
        for (connector, _) in self.state.networks.connectors() {
            connector.stop().await;
        }
        served?;
        Ok(())
    }
}

/// The SMPP connectors added through `/admin` (a name the file also uses is the file's).
async fn admin_connectors(
    store: &Store,
    from_file: &[SmppConfig],
) -> anyhow::Result<Vec<(SmppConfig, Source)>> {
    let rows = store
        .read(dialtone_store::sms_parts::connectors)
        .await
        .map_err(|e| anyhow::anyhow!("cannot read the SMPP connectors: {e}"))?;
    let mut out = Vec::new();
    for (name, json) in rows {
        if from_file.iter().any(|c| c.name == name) {
            continue;
        }
        match serde_json::from_str::<SmppConfig>(&json) {
            Ok(c) => out.push((c, Source::Admin)),
            Err(e) => {
                tracing::error!(%name, error = %format!("{e:#}"), "smpp: stored connector unreadable, skipped")
            }
        }
    }
    Ok(out)
}

/// Opens the configured database and applies pending migrations.
pub async fn open_store(config: &Config) -> anyhow::Result<Store> {
    let options = StoreOptions {
        connections: config
            .db_connections
            .unwrap_or_else(|| StoreOptions::default_connections(&config.database_url)),
        synchronous: config.sqlite_synchronous,
    };
    let store = Store::open(&config.database_url, &options)
        .await
        .map_err(|e| anyhow::anyhow!("cannot open the database: {e}"))?;
    migrate::run(&store)
        .await
        .map_err(|e| anyhow::anyhow!("cannot migrate the database: {e}"))?;
    Ok(store)
}

/// Every interface on one router.
pub fn router(state: AppState) -> Router {
    let (v2, _doc) = v2::router();
    let keyed = || axum::middleware::from_fn_with_state(state.clone(), http::idempotency::guard);
    let mut app = Router::new()
        .nest("/v2.0", v2.layer(keyed()))
        .merge(jsonrpc::router())
        .merge(rest11::router())
        .merge(ops::router())
        .merge(crate::console::router());
    if state.networks.simulated().is_some() {
        app = app.merge(sandbox::router().layer(keyed()));
    }
    if state.config.admin_token.is_some() {
        app = app.merge(admin::router(state.clone()));
    }
    let max_body = state.config.max_body_bytes;
    app.fallback(http::fallback)
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            http::body::deadline,
        ))
        .layer(axum::middleware::from_fn(http::contract_errors))
        .layer(DefaultBodyLimit::max(max_body))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            http::observe,
        ))
        .with_state(state)
}

/// Interpreter threads: one per core.
fn config_threads() -> usize {
    std::thread::available_parallelism().map_or(2, std::num::NonZero::get)
}

/// Binds HTTPS and makes (or loads) what it presents. A listener the operator asked for must
/// start; the default one is skipped with a warning when its port is taken or its
/// certificate cannot be kept, so a second server on one machine still starts.
async fn https(
    tls: &crate::config::Tls,
    data_dir: &std::path::Path,
) -> anyhow::Result<Option<(TcpListener, crate::tls::Identity)>> {
    let started = async {
        let listener = TcpListener::bind(&tls.listen)
            .await
            .map_err(|e| anyhow::anyhow!("cannot listen on {} (HTTPS): {e}", tls.listen))?;
        let identity = match &tls.identity {
            Some((cert, key)) => crate::tls::load(cert, key)?,
            None => {
                let host = listener.local_addr()?.ip();
                let names = crate::tls::self_signed_names(host);
                // Certificates live in the clients' time: the wall clock, not the server's
                // (a test's clock may be set anywhere).
                let now = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_secs() as i64);
                let dir = data_dir.join("tls");
                tokio::task::spawn_blocking(move || crate::tls::self_signed(&dir, &names, now))
                    .await??
            }
        };
        Ok::<_, anyhow::Error>((listener, identity))
    };
    match started.await {
        Ok(started) => Ok(Some(started)),
        Err(e) if !tls.required => {
            tracing::warn!(error = %format!("{e:#}"), "HTTPS not started (give --tls-listen to require it, or off)");
            Ok(None)
        }
        Err(e) => Err(e),
    }
}
