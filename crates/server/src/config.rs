//! Configuration: flags, each with a `DIALTONE_` environment variable, over an optional TOML
//! file, over built-in defaults that run everything on a laptop.

use std::path::{Path, PathBuf};

use dialtone_carrier::smpp::SmppConfig;
use dialtone_store::{DatabaseUrl, Synchronous};
use serde::Deserialize;

/// How logs are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

/// The resolved configuration of a server process.
#[derive(Debug, Clone)]
pub struct Config {
    /// Address to listen on (port 0 picks a free port).
    pub listen: String,
    /// Directory for the SQLite file and stored media.
    pub data_dir: PathBuf,
    /// The database.
    pub database_url: DatabaseUrl,
    /// Bearer token of the operator API; `/admin` answers 404 without one.
    pub admin_token: Option<String>,
    /// BRAND in the webhook headers `X-<BRAND>-EventId` and `X-<BRAND>-HmacSignature`.
    pub header_brand: String,
    /// Log format.
    pub log_format: LogFormat,
    /// Database connections (SQLite readers, PostgreSQL pool size); `None`: the database's
    /// own default ([`StoreOptions::default_connections`](dialtone_store::StoreOptions::default_connections)).
    pub db_connections: Option<usize>,
    /// SQLite commit durability.
    pub sqlite_synchronous: Synchronous,
    /// Create and print a `dev` account on first start with an empty database.
    pub dev_account: bool,
    /// Largest request body accepted, in bytes.
    pub max_body_bytes: usize,
    /// Run background workers in this process (tests drive them by hand instead).
    pub run_workers: bool,
    /// Base URL clients reach this server at, for links it hands out (signed download
    /// URLs); `http://<listen address>` when unset.
    pub public_url: Option<String>,
    /// Load the built-in fictional number inventory when the inventory is empty.
    pub default_inventory: bool,
    /// Run the simulated network (and `/sandbox`); off, only connectors carry SMS, and a
    /// destination no connector routes is refused.
    pub simulated_network: bool,
    /// Milliseconds between two statuses of an SMS on the simulated network.
    pub sim_step_ms: i64,
    /// Sender used when none is given and the account has no number in the destination's
    /// country.
    pub shared_sender: String,
    /// The STOP number that replaces `%STOPNUM%` for custom senders (SMS REST v1.1).
    pub stop_number: String,
    /// How long a webhook receiver has to answer, in milliseconds (the seed says 10 s).
    pub webhook_timeout_ms: u64,
    /// Default warning level of new accounts' balance.
    pub credit_warning: dialtone_domain::Money,
    /// Default shutdown level of new prepaid accounts' balance.
    pub credit_shutdown: dialtone_domain::Money,
    /// Largest audio file accepted by upload or recording, in bytes.
    pub audio_max_bytes: usize,
    /// Longest audio accepted, in milliseconds (longer ends in `error`, "too long").
    pub audio_max_duration_ms: u64,
    /// Most memory one audio conversion (a child process) may map, in MiB.
    pub audio_memory_mb: u64,
    /// Most CPU time one audio conversion may use, in seconds.
    pub audio_cpu_secs: u64,
    /// The dialtone binary that runs conversions (`dialtone convert-audio`); None: this
    /// process's own executable.
    pub audio_converter: Option<PathBuf>,
    /// Requests per second each account may make to this node (0: no limit); the operator
    /// overrides it per account.
    pub rate_limit: i64,
    /// Requests an account may burst above its rate (0: the rate, at least 1).
    pub rate_burst: i64,
    /// How long a client has to send a request's headers before its connection is closed.
    pub header_timeout_ms: u64,
    /// How long a request body may take, from the start of the request, before the request
    /// is refused.
    pub body_timeout_ms: u64,
    /// Most connections open at once.
    pub max_connections: usize,
    /// Most connections open at once from one client address.
    pub max_connections_per_ip: usize,
    /// Failed authentications a client address may make in a minute before it is refused
    /// (429) for the rest of it (0: no limit).
    pub auth_failures_per_minute: u32,
    /// How long events, their webhook deliveries and tries are kept, in milliseconds.
    pub retain_events_ms: i64,
    /// How long finished runs are kept, in milliseconds.
    pub retain_runs_ms: i64,
    /// How long an export's file is kept after its task ended, in milliseconds.
    pub retain_exports_ms: i64,
    /// Webhook subscriptions one account may hold.
    pub quota_webhooks: i64,
    /// Scenarios one account may hold.
    pub quota_scenarios: i64,
    /// Audio files one account may hold.
    pub quota_audio_files: i64,
    /// Bytes of audio (uploaded originals) one account may store.
    pub quota_audio_bytes: i64,
    /// Runs one account may have running at once.
    pub quota_running_runs: i64,
    /// Largest state of a run (its interpreter state and variables, as stored), in bytes;
    /// a step that would store more fails the run.
    pub max_run_state_bytes: usize,
    /// Whether webhooks and scenario fetches may reach private addresses; None: allowed
    /// when the server listens on loopback only.
    pub outbound_private: Option<crate::outbound::Private>,
    /// Networks webhooks and fetches may reach whatever `outbound_private` says (the
    /// operator's own receivers).
    pub outbound_allow: Vec<crate::outbound::Network>,
    /// SMPP connectors (`[[smpp]]` tables of the TOML file); none: every SMS goes to the
    /// simulated network.
    pub smpp: Vec<SmppConfig>,
    /// HTTPS beside HTTP; None: HTTP only.
    pub tls: Option<Tls>,
    /// The node's SIP side (`[sip_node]`, `--sip-listen`); None: no SIP listener (it starts
    /// anyway, with the defaults, once a trunk is configured or added).
    pub sip_node: Option<dialtone_sip::NodeConfig>,
    /// SIP trunks (`[[sip]]` tables of the TOML file); none: calls stay on the simulated
    /// network.
    pub sip: Vec<dialtone_sip::TrunkConfig>,
}

/// The HTTPS listener.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tls {
    /// Address to listen on (port 0 picks a free port).
    pub listen: String,
    /// PEM certificate chain and key; None: a self-signed certificate kept in
    /// `DATA_DIR/tls`.
    pub identity: Option<(PathBuf, PathBuf)>,
    /// The operator chose the address: a start that cannot listen there fails. The default
    /// address only warns, so a second server on the same machine still starts.
    pub required: bool,
}

/// Port of the default HTTPS listener (on the host of `--listen`).
pub const DEFAULT_TLS_PORT: u16 = 8443;

/// Settings a TOML file may hold (the same names as the flags, with underscores).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileConfig {
    /// See [`Config::listen`].
    pub listen: Option<String>,
    /// See [`Config::data_dir`].
    pub data_dir: Option<PathBuf>,
    /// See [`Config::database_url`].
    pub database_url: Option<String>,
    /// See [`Config::admin_token`].
    pub admin_token: Option<String>,
    /// See [`Config::header_brand`].
    pub header_brand: Option<String>,
    /// See [`Config::log_format`].
    pub log_format: Option<LogFormat>,
    /// See [`Config::db_connections`].
    pub db_connections: Option<usize>,
    /// See [`Config::simulated_network`].
    pub simulated_network: Option<bool>,
    /// See [`Config::audio_memory_mb`].
    pub audio_memory_mb: Option<u64>,
    /// See [`Config::audio_cpu_secs`].
    pub audio_cpu_secs: Option<u64>,
    /// See [`Config::sim_step_ms`].
    pub sim_step_ms: Option<i64>,
    /// See [`Config::shared_sender`].
    pub shared_sender: Option<String>,
    /// See [`Config::stop_number`].
    pub stop_number: Option<String>,
    /// See [`Config::credit_warning`] (cents).
    pub credit_warning: Option<String>,
    /// See [`Config::credit_shutdown`] (cents).
    pub credit_shutdown: Option<String>,
    /// See [`Config::audio_max_bytes`].
    pub audio_max_bytes: Option<usize>,
    /// See [`Config::audio_max_duration_ms`] (seconds).
    pub audio_max_duration: Option<u64>,
    /// See [`Config::run_workers`].
    pub workers: Option<bool>,
    /// See [`Config::public_url`].
    pub public_url: Option<String>,
    /// See [`Config::rate_limit`].
    pub rate_limit: Option<i64>,
    /// See [`Config::rate_burst`].
    pub rate_burst: Option<i64>,
    /// See [`Config::max_connections`].
    pub max_connections: Option<usize>,
    /// See [`Config::max_connections_per_ip`].
    pub max_connections_per_ip: Option<usize>,
    /// See [`Config::auth_failures_per_minute`].
    pub auth_failures_per_minute: Option<u32>,
    /// See [`Config::body_timeout_ms`] (seconds).
    pub body_timeout: Option<u64>,
    /// See [`Config::retain_events_ms`] (a duration: `30d`, `12h`, `90m`, `600s`).
    pub retain_events: Option<String>,
    /// See [`Config::retain_runs_ms`].
    pub retain_runs: Option<String>,
    /// See [`Config::retain_exports_ms`].
    pub retain_exports: Option<String>,
    /// See [`Config::quota_webhooks`].
    pub quota_webhooks: Option<i64>,
    /// See [`Config::quota_scenarios`].
    pub quota_scenarios: Option<i64>,
    /// See [`Config::quota_audio_files`].
    pub quota_audio_files: Option<i64>,
    /// See [`Config::quota_audio_bytes`].
    pub quota_audio_bytes: Option<i64>,
    /// See [`Config::quota_running_runs`].
    pub quota_running_runs: Option<i64>,
    /// See [`Config::max_run_state_bytes`].
    pub max_run_state_bytes: Option<usize>,
    /// See [`Config::outbound_private`].
    pub outbound_private: Option<crate::outbound::Private>,
    /// See [`Config::outbound_allow`].
    pub outbound_allow: Option<Vec<String>>,
    /// See [`Config::smpp`].
    pub smpp: Option<Vec<SmppConfig>>,
    /// See [`Config::sip_node`].
    pub sip_node: Option<dialtone_sip::NodeConfig>,
    /// See [`Config::sip`].
    pub sip: Option<Vec<dialtone_sip::TrunkConfig>>,
    /// See [`Tls::listen`] (`off`: HTTP only).
    pub tls_listen: Option<String>,
    /// See [`Tls::identity`].
    pub tls_cert: Option<PathBuf>,
    /// See [`Tls::identity`].
    pub tls_key: Option<PathBuf>,
}

impl FileConfig {
    /// Reads a TOML configuration file.
    pub fn load(path: &Path) -> anyhow::Result<Self> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", path.display()))?;
        toml::from_str(&text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
    }
}

const DAY_MS: i64 = 24 * 3600 * 1000;

/// A duration of the settings: a number and its unit, `s`, `m`, `h` or `d` (`30d`, `90m`).
pub fn parse_duration_ms(text: &str) -> anyhow::Result<i64> {
    let text = text.trim();
    let unit_at = text
        .find(|c: char| !c.is_ascii_digit())
        .ok_or_else(|| anyhow::anyhow!("{text:?}: a number and a unit (s, m, h, d)"))?;
    let (number, unit) = text.split_at(unit_at);
    let n: i64 = number
        .parse()
        .map_err(|_| anyhow::anyhow!("{text:?}: a number and a unit (s, m, h, d)"))?;
    let unit_ms = match unit {
        "s" => 1_000,
        "m" => 60_000,
        "h" => 3_600_000,
        "d" => DAY_MS,
        _ => anyhow::bail!("{text:?}: the unit is s, m, h or d"),
    };
    n.checked_mul(unit_ms)
        .filter(|ms| *ms > 0)
        .ok_or_else(|| anyhow::anyhow!("{text:?}: out of range"))
}

/// Default listen address.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:8080";
/// Default data directory.
pub const DEFAULT_DATA_DIR: &str = "./dialtone-data";

impl Config {
    /// The embedded defaults, with the data under `data_dir`.
    pub fn embedded(data_dir: impl Into<PathBuf>) -> Self {
        let data_dir = data_dir.into();
        Self {
            listen: DEFAULT_LISTEN.to_owned(),
            database_url: DatabaseUrl::Sqlite(data_dir.join("dialtone.db")),
            data_dir,
            admin_token: None,
            header_brand: "SVC".to_owned(),
            log_format: LogFormat::Text,
            db_connections: None,
            sqlite_synchronous: Synchronous::Full,
            dev_account: true,
            max_body_bytes: 2 * 1024 * 1024,
            run_workers: true,
            public_url: None,
            default_inventory: true,
            simulated_network: true,
            sim_step_ms: 200,
            shared_sender: "+447700900000".to_owned(),
            stop_number: "+447700900000".to_owned(),
            webhook_timeout_ms: 10_000,
            credit_warning: dialtone_domain::Money::from_cents(1_000),
            credit_shutdown: dialtone_domain::Money::ZERO,
            audio_max_bytes: 20 * 1024 * 1024,
            audio_max_duration_ms: 10 * 60 * 1000,
            audio_memory_mb: 256,
            audio_cpu_secs: 60,
            audio_converter: None,
            rate_limit: 0,
            rate_burst: 0,
            header_timeout_ms: 30_000,
            body_timeout_ms: 60_000,
            max_connections: crate::http::client::default_max_connections(),
            max_connections_per_ip: 256,
            auth_failures_per_minute: 20,
            outbound_private: None,
            outbound_allow: Vec::new(),
            retain_events_ms: 30 * DAY_MS,
            retain_runs_ms: 30 * DAY_MS,
            retain_exports_ms: DAY_MS,
            quota_webhooks: 100,
            quota_scenarios: 1_000,
            quota_audio_files: 1_000,
            quota_audio_bytes: 1024 * 1024 * 1024,
            quota_running_runs: 1_000,
            max_run_state_bytes: 256 * 1024,
            smpp: Vec::new(),
            tls: None,
            sip_node: None,
            sip: Vec::new(),
        }
    }

    /// The base of links this server hands out, without a trailing slash.
    pub fn public_url(&self) -> String {
        self.public_url
            .clone()
            .unwrap_or_else(|| format!("http://{}", self.listen))
            .trim_end_matches('/')
            .to_owned()
    }

    /// Checks what the types alone do not.
    pub fn validate(&self) -> anyhow::Result<()> {
        let brand_ok = !self.header_brand.is_empty()
            && self.header_brand.len() <= 32
            && self
                .header_brand
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-');
        if !brand_ok {
            anyhow::bail!("--header-brand must be 1 to 32 letters, digits or dashes");
        }
        if let Some(token) = &self.admin_token
            && token.len() < 16
        {
            anyhow::bail!("--admin-token must be at least 16 characters");
        }
        validate_smpp(&self.smpp)?;
        if let Some(node) = &self.sip_node {
            let problems = node.problems();
            if !problems.is_empty() {
                anyhow::bail!("[sip_node]: {}", problems.join("; "));
            }
        }
        validate_sip(&self.sip)
    }
}

/// Each trunk valid, names unique, at most one default.
pub fn validate_sip(trunks: &[dialtone_sip::TrunkConfig]) -> anyhow::Result<()> {
    for (i, t) in trunks.iter().enumerate() {
        let problems = t.problems();
        if !problems.is_empty() {
            anyhow::bail!("sip trunk {:?}: {}", t.name, problems.join("; "));
        }
        if trunks[..i].iter().any(|o| o.name == t.name) {
            anyhow::bail!("sip trunk {:?}: the name is taken", t.name);
        }
    }
    if trunks.iter().filter(|t| t.default).count() > 1 {
        anyhow::bail!("at most one sip trunk may be the default");
    }
    Ok(())
}

/// Each connector valid, names unique, at most one default.
pub fn validate_smpp(connectors: &[SmppConfig]) -> anyhow::Result<()> {
    for (i, c) in connectors.iter().enumerate() {
        c.validate().map_err(|e| anyhow::anyhow!(e))?;
        if connectors[..i].iter().any(|o| o.name == c.name) {
            anyhow::bail!("two SMPP connectors are named {}", c.name);
        }
    }
    if connectors.iter().filter(|c| c.default).count() > 1 {
        anyhow::bail!("at most one SMPP connector may be the default");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration_ms("30d").unwrap(), 30 * DAY_MS);
        assert_eq!(parse_duration_ms("90m").unwrap(), 5_400_000);
        assert_eq!(parse_duration_ms("10s").unwrap(), 10_000);
        for bad in ["", "30", "d", "3x", "0s", "-1d"] {
            assert!(parse_duration_ms(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn smpp_connectors_from_toml() {
        let file: FileConfig = toml::from_str(
            r#"
            [[smpp]]
            name = "operator-a"
            host = "smsc.example.net"
            port = 2775
            system_id = "dialtone"
            password = "secret"
            bind = "transmitter-receiver"
            tls = true
            throughput = 20
            window = 5
            concatenation = "sar"
            prefixes = ["+33"]

            [[smpp]]
            name = "operator-b"
            host = "10.0.0.2"
            port = 2776
            system_id = "dt"
            default = true
            "#,
        )
        .expect("parses");
        let smpp = file.smpp.expect("connectors");
        assert_eq!(smpp.len(), 2);
        assert_eq!(smpp[0].window, 5);
        assert_eq!(smpp[1].throughput, 50, "default throughput");
        assert!(validate_smpp(&smpp).is_ok());
        let mut twice = smpp.clone();
        twice[1].name = "operator-a".into();
        assert!(validate_smpp(&twice).is_err());
        let mut defaults = smpp.clone();
        defaults[0].default = true;
        assert!(validate_smpp(&defaults).is_err());
        assert!(toml::from_str::<FileConfig>("[[smpp]]\nname = \"x\"\nhostname = \"y\"").is_err());
    }
}
