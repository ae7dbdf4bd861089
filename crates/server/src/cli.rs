//! The command line: `serve`, `migrate`, and the operator's account and key commands, which
//! act directly on the configured database.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};
use dialtone_store::DatabaseUrl;

use crate::config::{Config, DEFAULT_DATA_DIR, DEFAULT_LISTEN, FileConfig, LogFormat};

/// dialtone: a self-hostable voice, SMS and phone-number platform.
#[derive(Debug, Parser)]
#[command(name = "dialtone", version, about)]
pub struct Cli {
    /// Settings shared by every command.
    #[command(flatten)]
    pub settings: Settings,
    /// What to do (default: serve).
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// Settings: flags, each with an environment variable, over an optional TOML file.
#[derive(Debug, Args)]
pub struct Settings {
    /// TOML configuration file (same keys as the flags, with underscores).
    #[arg(long, env = "DIALTONE_CONFIG", global = true)]
    pub config: Option<PathBuf>,
    /// Address to listen on [default: 127.0.0.1:8080].
    #[arg(long, env = "DIALTONE_LISTEN", global = true)]
    pub listen: Option<String>,
    /// Directory for the SQLite database and stored media [default: ./dialtone-data].
    #[arg(long, env = "DIALTONE_DATA_DIR", global = true)]
    pub data_dir: Option<PathBuf>,
    /// sqlite:PATH or postgres://... [default: sqlite:DATA_DIR/dialtone.db].
    #[arg(long, env = "DIALTONE_DATABASE_URL", global = true)]
    pub database_url: Option<String>,
    /// Bearer token of the operator API (/admin answers 404 without one).
    #[arg(
        long,
        env = "DIALTONE_ADMIN_TOKEN",
        global = true,
        hide_env_values = true
    )]
    pub admin_token: Option<String>,
    /// BRAND of the webhook headers X-<BRAND>-EventId and X-<BRAND>-HmacSignature [default: SVC].
    #[arg(long, env = "DIALTONE_HEADER_BRAND", global = true)]
    pub header_brand: Option<String>,
    /// Log format [default: text].
    #[arg(long, env = "DIALTONE_LOG_FORMAT", global = true, value_enum)]
    pub log_format: Option<LogFormat>,
    /// Database connections: SQLite readers, PostgreSQL pool size [default: SQLite 4,
    /// PostgreSQL one per core from 2 to 4].
    #[arg(long, env = "DIALTONE_DB_CONNECTIONS", global = true)]
    pub db_connections: Option<usize>,
    /// Milliseconds between two SMS statuses on the simulated network [default: 200].
    #[arg(long, env = "DIALTONE_SIM_STEP", global = true)]
    pub sim_step: Option<i64>,
    /// Most memory an audio conversion may map, in MiB [default: 256].
    #[arg(long, env = "DIALTONE_AUDIO_MEMORY_MB", global = true)]
    pub audio_memory_mb: Option<u64>,
    /// Most CPU time an audio conversion may use, in seconds [default: 60].
    #[arg(long, env = "DIALTONE_AUDIO_CPU_SECS", global = true)]
    pub audio_cpu_secs: Option<u64>,
    /// Most connections open at once [default: from the open-file limit, at most 8192].
    #[arg(long, env = "DIALTONE_MAX_CONNECTIONS", global = true)]
    pub max_connections: Option<usize>,
    /// Most connections open at once from one client address [default: 256].
    #[arg(long, env = "DIALTONE_MAX_CONNECTIONS_PER_IP", global = true)]
    pub max_connections_per_ip: Option<usize>,
    /// Failed authentications per client address a minute before it is refused for the
    /// rest of it (0: no limit) [default: 20].
    #[arg(long, env = "DIALTONE_AUTH_FAILURES_PER_MINUTE", global = true)]
    pub auth_failures_per_minute: Option<u32>,
    /// Seconds a request body may take from the start of the request [default: 60].
    #[arg(long, env = "DIALTONE_BODY_TIMEOUT", global = true)]
    pub body_timeout: Option<u64>,
    /// Whether webhooks and scenario fetches may reach private, loopback and link-local
    /// addresses [default: allow when listening on loopback only, else deny].
    #[arg(long, env = "DIALTONE_OUTBOUND_PRIVATE", global = true, value_enum)]
    pub outbound_private: Option<crate::outbound::Private>,
    /// Networks webhooks and fetches may always reach, comma-separated (10.0.5.0/24,fd00::7).
    #[arg(
        long,
        env = "DIALTONE_OUTBOUND_ALLOW",
        global = true,
        value_delimiter = ','
    )]
    pub outbound_allow: Option<Vec<String>>,
    /// How long events, webhook deliveries and their tries are kept (30d, 12h, 90m)
    /// [default: 30d].
    #[arg(long, env = "DIALTONE_RETAIN_EVENTS", global = true)]
    pub retain_events: Option<String>,
    /// How long finished runs are kept [default: 30d].
    #[arg(long, env = "DIALTONE_RETAIN_RUNS", global = true)]
    pub retain_runs: Option<String>,
    /// How long an export's file is kept after its task ended [default: 24h].
    #[arg(long, env = "DIALTONE_RETAIN_EXPORTS", global = true)]
    pub retain_exports: Option<String>,
    /// Webhook subscriptions one account may hold [default: 100].
    #[arg(long, env = "DIALTONE_QUOTA_WEBHOOKS", global = true)]
    pub quota_webhooks: Option<i64>,
    /// Scenarios one account may hold [default: 1000].
    #[arg(long, env = "DIALTONE_QUOTA_SCENARIOS", global = true)]
    pub quota_scenarios: Option<i64>,
    /// Audio files one account may hold [default: 1000].
    #[arg(long, env = "DIALTONE_QUOTA_AUDIO_FILES", global = true)]
    pub quota_audio_files: Option<i64>,
    /// Bytes of audio one account may store [default: 1073741824 (1 GiB)].
    #[arg(long, env = "DIALTONE_QUOTA_AUDIO_BYTES", global = true)]
    pub quota_audio_bytes: Option<i64>,
    /// Runs one account may have running at once [default: 1000].
    #[arg(long, env = "DIALTONE_QUOTA_RUNNING_RUNS", global = true)]
    pub quota_running_runs: Option<i64>,
    /// Largest state (state and variables) of a run, in bytes [default: 262144].
    #[arg(long, env = "DIALTONE_MAX_RUN_STATE_BYTES", global = true)]
    pub max_run_state_bytes: Option<usize>,
    /// Address of HTTPS beside HTTP, or `off` [default: port 8443 on the host of --listen,
    /// skipped with a warning when it is taken].
    #[arg(long, env = "DIALTONE_TLS_LISTEN", global = true)]
    pub tls_listen: Option<String>,
    /// PEM certificate chain of HTTPS [default: a self-signed certificate made once and
    /// kept in DATA_DIR/tls].
    #[arg(long, env = "DIALTONE_TLS_CERT", global = true)]
    pub tls_cert: Option<PathBuf>,
    /// PEM private key of --tls-cert.
    #[arg(long, env = "DIALTONE_TLS_KEY", global = true)]
    pub tls_key: Option<PathBuf>,
    /// Address SIP is received on (UDP and TCP), which starts the node's SIP side
    /// [default: none; 127.0.0.1:5060 once a trunk is configured].
    #[arg(long, env = "DIALTONE_SIP_LISTEN", global = true)]
    pub sip_listen: Option<std::net::SocketAddr>,
    /// The address written in SDP and Contact for a node behind NAT [default: the address
    /// SIP is received on, or the one the trunk is reached from].
    #[arg(long, env = "DIALTONE_SIP_PUBLIC_IP", global = true)]
    pub sip_public_ip: Option<std::net::IpAddr>,
    /// RTP ports, `first-last` [default: 20000-30000].
    #[arg(long, env = "DIALTONE_RTP_PORTS", global = true)]
    pub rtp_ports: Option<String>,
    /// Run the simulated network and /sandbox; false: only SMPP connectors carry SMS and a
    /// destination none routes is refused [default: true].
    #[arg(long, env = "DIALTONE_SIMULATED_NETWORK", global = true)]
    pub simulated_network: Option<bool>,
    /// Sender used when none is given and no number fits [default: +447700900000].
    #[arg(long, env = "DIALTONE_SHARED_SENDER", global = true)]
    pub shared_sender: Option<String>,
    /// STOP number replacing %STOPNUM% for custom senders [default: +447700900000].
    #[arg(long, env = "DIALTONE_STOP_NUMBER", global = true)]
    pub stop_number: Option<String>,
    /// Default warning level of new accounts, in cents [default: 1000.00].
    #[arg(long, env = "DIALTONE_CREDIT_WARNING", global = true)]
    pub credit_warning: Option<String>,
    /// Default shutdown level of new prepaid accounts, in cents [default: 0.00].
    #[arg(long, env = "DIALTONE_CREDIT_SHUTDOWN", global = true)]
    pub credit_shutdown: Option<String>,
    /// Largest audio file accepted, in bytes [default: 20971520 (20 MiB)].
    #[arg(long, env = "DIALTONE_AUDIO_MAX_BYTES", global = true)]
    pub audio_max_bytes: Option<usize>,
    /// Longest audio accepted, in seconds [default: 600].
    #[arg(long, env = "DIALTONE_AUDIO_MAX_DURATION", global = true)]
    pub audio_max_duration: Option<u64>,
    /// Run the background workers (SMS progress, webhook deliveries, expiries, fees) in this
    /// process; `false` makes an API-only node beside nodes that run them [default: true].
    #[arg(long, env = "DIALTONE_WORKERS", global = true)]
    pub workers: Option<bool>,
    /// Base URL clients reach this server at, for signed download links
    /// [default: http://LISTEN].
    #[arg(long, env = "DIALTONE_PUBLIC_URL", global = true)]
    pub public_url: Option<String>,
    /// Requests per second each account may make to this node; 0 for no limit. The operator
    /// sets other rates per account (PATCH /admin/accounts/{sid}) [default: 0].
    #[arg(long, env = "DIALTONE_RATE_LIMIT", global = true)]
    pub rate_limit: Option<i64>,
    /// Requests an account may make at once above its rate [default: the rate].
    #[arg(long, env = "DIALTONE_RATE_BURST", global = true)]
    pub rate_burst: Option<i64>,
}

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the server (applies migrations first).
    Serve,
    /// Apply database migrations and exit.
    Migrate,
    /// Manage accounts.
    #[command(subcommand)]
    Account(AccountCommand),
    /// Manage API keys.
    #[command(subcommand)]
    Key(KeyCommand),
    /// Manage the number inventory.
    #[command(subcommand)]
    Inventory(InventoryCommand),
    /// Manage the rate table.
    #[command(subcommand)]
    Rates(RatesCommand),
    /// Manage alphanumeric senders.
    #[command(subcommand)]
    Sender(SenderCommand),
    /// Manage prepaid credit.
    #[command(subcommand)]
    Credit(CreditCommand),
    /// Convert one audio file from stdin to stdout under a memory and CPU budget (the
    /// server runs it as a child process; not for people).
    #[command(hide = true)]
    ConvertAudio(crate::media::converter::ChildArgs),
}

/// Credit commands.
#[derive(Debug, Subcommand)]
pub enum CreditCommand {
    /// Top up an account (emits billing.credit).
    Add {
        /// Account SID.
        #[arg(long)]
        account: String,
        /// Amount in cents, such as 5000.00.
        #[arg(long)]
        amount: String,
    },
}

/// Rate table commands.
#[derive(Debug, Subcommand)]
pub enum RatesCommand {
    /// Load rates from a CSV file (label,country,type,prefix,smsPrice,callPricePerMinute,numberMonthlyPrice).
    Import {
        /// The CSV file.
        file: PathBuf,
    },
}

/// Sender commands.
#[derive(Debug, Subcommand)]
pub enum SenderCommand {
    /// Approve an alphanumeric sender for an account.
    Approve {
        /// Account SID.
        #[arg(long)]
        account: String,
        /// The sender (1 to 11 characters).
        #[arg(long)]
        sender: String,
    },
}

/// Inventory commands.
#[derive(Debug, Subcommand)]
pub enum InventoryCommand {
    /// Load ranges from a CSV file (country,type,class,prefix,area,first,last,setupPrice,monthlyPrice).
    Import {
        /// The CSV file.
        file: PathBuf,
    },
}

/// Account commands.
#[derive(Debug, Subcommand)]
pub enum AccountCommand {
    /// Create an account (prints its password and API key once).
    Create {
        /// Display name.
        #[arg(long)]
        name: String,
        /// Parent account SID, to create a sub account.
        #[arg(long)]
        parent: Option<String>,
        /// Opening prepaid credit in cents, such as 100000.00.
        #[arg(long)]
        credit: Option<String>,
        /// ISO 4217 currency [default: the parent's, or EUR].
        #[arg(long)]
        currency: Option<String>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// List accounts.
    List {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

/// API key commands.
#[derive(Debug, Subcommand)]
pub enum KeyCommand {
    /// Create a key for an account (printed once).
    Create {
        /// Account SID.
        #[arg(long)]
        account: String,
    },
    /// Revoke a key by its identifier (the first 11 characters, dt_XXXXXXXX).
    Revoke {
        /// Account SID.
        #[arg(long)]
        account: String,
        /// Key identifier.
        #[arg(long)]
        key: String,
    },
}

impl Settings {
    /// Resolves flags and environment over the file over the defaults.
    pub fn resolve(&self) -> anyhow::Result<Config> {
        let file = match &self.config {
            Some(path) => FileConfig::load(path)?,
            None => FileConfig::default(),
        };
        let data_dir = self
            .data_dir
            .clone()
            .or(file.data_dir.clone())
            .unwrap_or_else(|| PathBuf::from(DEFAULT_DATA_DIR));
        let mut config = Config::embedded(&data_dir);
        config.listen = self
            .listen
            .clone()
            .or(file.listen.clone())
            .unwrap_or_else(|| DEFAULT_LISTEN.to_owned());
        if let Some(url) = self.database_url.clone().or(file.database_url.clone()) {
            config.database_url = DatabaseUrl::parse(&url).map_err(|e| anyhow::anyhow!(e))?;
        }
        config.admin_token = self
            .admin_token
            .clone()
            .or(file.admin_token.clone())
            .filter(|t| !t.is_empty());
        if let Some(brand) = self.header_brand.clone().or(file.header_brand.clone()) {
            config.header_brand = brand;
        }
        if let Some(format) = self.log_format.or(file.log_format) {
            config.log_format = format;
        }
        self.resolve_connections(&file, &mut config)?;
        self.resolve_retention_and_quotas(&file, &mut config)?;
        self.resolve_networks(&file, &mut config)?;
        self.resolve_billing_and_media(&file, &mut config)?;
        config.validate()?;
        Ok(config)
    }

    /// Connections, authentication failures and body timeouts.
    fn resolve_connections(&self, file: &FileConfig, config: &mut Config) -> anyhow::Result<()> {
        if let Some(n) = self.db_connections.or(file.db_connections) {
            config.db_connections = Some(n.clamp(1, 64));
        }
        if let Some(n) = self.max_connections.or(file.max_connections) {
            config.max_connections = n.clamp(1, 1_000_000);
        }
        if let Some(n) = self.max_connections_per_ip.or(file.max_connections_per_ip) {
            config.max_connections_per_ip = n.clamp(1, 1_000_000);
        }
        if let Some(n) = self
            .auth_failures_per_minute
            .or(file.auth_failures_per_minute)
        {
            config.auth_failures_per_minute = n;
        }
        if let Some(secs) = self.body_timeout.or(file.body_timeout) {
            config.body_timeout_ms = secs.clamp(1, 3600) * 1000;
        }
        Ok(())
    }

    /// How long records are kept, and each account's quotas.
    fn resolve_retention_and_quotas(
        &self,
        file: &FileConfig,
        config: &mut Config,
    ) -> anyhow::Result<()> {
        let retain = |name: &str, flag: Option<String>, file: Option<String>, into: &mut i64| {
            if let Some(text) = flag.or(file) {
                *into = crate::config::parse_duration_ms(&text)
                    .map_err(|e| anyhow::anyhow!("--{name}: {e}"))?;
            }
            Ok::<_, anyhow::Error>(())
        };
        retain(
            "retain-events",
            self.retain_events.clone(),
            file.retain_events.clone(),
            &mut config.retain_events_ms,
        )?;
        retain(
            "retain-runs",
            self.retain_runs.clone(),
            file.retain_runs.clone(),
            &mut config.retain_runs_ms,
        )?;
        retain(
            "retain-exports",
            self.retain_exports.clone(),
            file.retain_exports.clone(),
            &mut config.retain_exports_ms,
        )?;
        let quota = |flag: Option<i64>, file: Option<i64>, into: &mut i64| {
            if let Some(n) = flag.or(file) {
                *into = n.clamp(0, i64::MAX);
            }
        };
        quota(
            self.quota_webhooks,
            file.quota_webhooks,
            &mut config.quota_webhooks,
        );
        quota(
            self.quota_scenarios,
            file.quota_scenarios,
            &mut config.quota_scenarios,
        );
        quota(
            self.quota_audio_files,
            file.quota_audio_files,
            &mut config.quota_audio_files,
        );
        quota(
            self.quota_audio_bytes,
            file.quota_audio_bytes,
            &mut config.quota_audio_bytes,
        );
        quota(
            self.quota_running_runs,
            file.quota_running_runs,
            &mut config.quota_running_runs,
        );
        if let Some(n) = self.max_run_state_bytes.or(file.max_run_state_bytes) {
            config.max_run_state_bytes = n.clamp(4_096, 64 * 1024 * 1024);
        }
        Ok(())
    }

    /// Outbound requests, HTTPS, the simulated network and the senders it uses.
    fn resolve_networks(&self, file: &FileConfig, config: &mut Config) -> anyhow::Result<()> {
        if let Some(mode) = self.outbound_private.or(file.outbound_private) {
            config.outbound_private = Some(mode);
        }
        if let Some(list) = self.outbound_allow.clone().or(file.outbound_allow.clone()) {
            config.outbound_allow = list
                .iter()
                .filter(|n| !n.trim().is_empty())
                .map(|n| crate::outbound::Network::parse(n))
                .collect::<Result<_, _>>()
                .map_err(|e| anyhow::anyhow!("--outbound-allow: {e}"))?;
        }
        if let Some(mb) = self.audio_memory_mb.or(file.audio_memory_mb) {
            config.audio_memory_mb = mb.clamp(64, 16 * 1024);
        }
        if let Some(secs) = self.audio_cpu_secs.or(file.audio_cpu_secs) {
            config.audio_cpu_secs = secs.clamp(1, 3600);
        }
        config.tls = resolve_tls(
            &config.listen,
            self.tls_listen.clone().or(file.tls_listen.clone()),
            self.tls_cert.clone().or(file.tls_cert.clone()),
            self.tls_key.clone().or(file.tls_key.clone()),
        )?;
        if let Some(on) = self.simulated_network.or(file.simulated_network) {
            config.simulated_network = on;
        }
        if let Some(step) = self.sim_step.or(file.sim_step_ms) {
            config.sim_step_ms = step.clamp(1, 3_600_000);
        }
        if let Some(sender) = self.shared_sender.clone().or(file.shared_sender.clone()) {
            config.shared_sender = sender;
        }
        if let Some(stop) = self.stop_number.clone().or(file.stop_number.clone()) {
            config.stop_number = stop;
        }
        Ok(())
    }

    /// Credit thresholds, audio bounds, workers, the public URL, rate limits and SMPP connectors.
    fn resolve_billing_and_media(
        &self,
        file: &FileConfig,
        config: &mut Config,
    ) -> anyhow::Result<()> {
        let cents = |name: &str, v: String| {
            dialtone_domain::Money::parse_cents(&v).map_err(|e| anyhow::anyhow!("--{name}: {e}"))
        };
        if let Some(v) = self.credit_warning.clone().or(file.credit_warning.clone()) {
            config.credit_warning = cents("credit-warning", v)?;
        }
        if let Some(v) = self
            .credit_shutdown
            .clone()
            .or(file.credit_shutdown.clone())
        {
            config.credit_shutdown = cents("credit-shutdown", v)?;
        }
        if let Some(n) = self.audio_max_bytes.or(file.audio_max_bytes) {
            config.audio_max_bytes = n.clamp(1024, 1024 * 1024 * 1024);
        }
        if let Some(secs) = self.audio_max_duration.or(file.audio_max_duration) {
            config.audio_max_duration_ms = secs.clamp(1, 24 * 3600) * 1000;
        }
        if let Some(run) = self.workers.or(file.workers) {
            config.run_workers = run;
        }
        if let Some(url) = self.public_url.clone().or(file.public_url.clone()) {
            config.public_url = Some(url);
        }
        if let Some(n) = self.rate_limit.or(file.rate_limit) {
            config.rate_limit = n.clamp(0, 1_000_000);
        }
        if let Some(n) = self.rate_burst.or(file.rate_burst) {
            config.rate_burst = n.clamp(0, 1_000_000);
        }
        if let Some(connectors) = file.smpp.clone() {
            config.smpp = connectors;
        }
        self.resolve_sip(file, config)
    }

    /// The node's SIP side and its trunks.
    fn resolve_sip(&self, file: &FileConfig, config: &mut Config) -> anyhow::Result<()> {
        config.sip_node = file.sip_node.clone();
        if let Some(trunks) = file.sip.clone() {
            config.sip = trunks;
        }
        let wanted = self.sip_listen.is_some()
            || self.sip_public_ip.is_some()
            || self.rtp_ports.is_some()
            || !config.sip.is_empty();
        if wanted && config.sip_node.is_none() {
            config.sip_node = Some(dialtone_sip::NodeConfig::default());
        }
        if let Some(node) = config.sip_node.as_mut() {
            if let Some(listen) = self.sip_listen {
                node.listen = listen;
            }
            if let Some(ip) = self.sip_public_ip {
                node.public_ip = Some(ip);
            }
            if let Some(ports) = &self.rtp_ports {
                let (first, last) = ports
                    .split_once('-')
                    .and_then(|(a, b)| Some((a.trim().parse().ok()?, b.trim().parse().ok()?)))
                    .ok_or_else(|| {
                        anyhow::anyhow!("--rtp-ports: first-last, such as 20000-30000")
                    })?;
                node.rtp_first = first;
                node.rtp_last = last;
            }
        }
        Ok(())
    }
}

/// HTTPS from its flags: `off` for none; an address the operator gave is required; absent,
/// port 8443 on the host of `--listen` (port 0 when `--listen` has port 0), not required.
fn resolve_tls(
    listen: &str,
    tls_listen: Option<String>,
    cert: Option<PathBuf>,
    key: Option<PathBuf>,
) -> anyhow::Result<Option<crate::config::Tls>> {
    let identity = match (cert, key) {
        (Some(cert), Some(key)) => Some((cert, key)),
        (None, None) => None,
        _ => anyhow::bail!("--tls-cert and --tls-key go together"),
    };
    let (listen, required) = match tls_listen.as_deref() {
        Some("off") if identity.is_some() => {
            anyhow::bail!("--tls-listen off with --tls-cert: HTTPS is off, the certificate unused")
        }
        Some("off") => return Ok(None),
        Some(addr) => (addr.to_owned(), true),
        None => {
            let (host, port) = listen
                .rsplit_once(':')
                .ok_or_else(|| anyhow::anyhow!("--listen {listen}: expected HOST:PORT"))?;
            let port = if port == "0" {
                0
            } else {
                crate::config::DEFAULT_TLS_PORT
            };
            (format!("{host}:{port}"), false)
        }
    };
    Ok(Some(crate::config::Tls {
        listen,
        identity,
        required,
    }))
}
