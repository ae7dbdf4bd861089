//! How an operator describes one SMPP bind (a table of `[[smpp]]` in the TOML file).

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// How the connector binds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum BindMode {
    /// One `bind_transceiver` session carries submits and deliveries.
    #[default]
    Transceiver,
    /// A `bind_transmitter` session for submits and a `bind_receiver` session for deliveries.
    TransmitterReceiver,
}

/// How a multi-part message says it is one message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Concatenation {
    /// A user data header in the short message (`esm_class` UDHI), 8-bit reference.
    #[default]
    Udh,
    /// The `sar_msg_ref_num`, `sar_total_segments`, `sar_segment_seqnum` TLVs.
    Sar,
}

/// One SMPP connector: where the SMSC is, how to bind, and the pace it accepts.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SmppConfig {
    /// Name of the connector (stored with each message part it carries).
    pub name: String,
    /// SMSC host name or address.
    pub host: String,
    /// SMSC port.
    pub port: u16,
    /// `system_id` of the bind.
    pub system_id: String,
    /// Password of the bind (at most 8 characters in SMPP 3.4).
    #[serde(default)]
    pub password: String,
    /// `system_type` of the bind.
    #[serde(default)]
    pub system_type: String,
    /// Transceiver, or transmitter plus receiver.
    #[serde(default)]
    pub bind: BindMode,
    /// Connect over TLS (the host name is checked against the web's root certificates).
    #[serde(default)]
    pub tls: bool,
    /// A PEM file of more trusted roots for TLS (an operator's private CA).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls_ca_file: Option<String>,
    /// Most `submit_sm` per second (0: no limit).
    #[serde(default = "default_throughput")]
    pub throughput: u32,
    /// Most requests awaiting their response at once.
    #[serde(default = "default_window")]
    pub window: u32,
    /// UDH or SAR for multi-part messages.
    #[serde(default)]
    pub concatenation: Concatenation,
    /// Seconds between two `enquire_link` on a quiet session.
    #[serde(default = "default_enquire_link")]
    pub enquire_link_secs: u64,
    /// Milliseconds a request (bind, submit, enquire_link) may wait for its response.
    #[serde(default = "default_response_timeout")]
    pub response_timeout_ms: u64,
    /// First wait before binding again after a failure; it doubles up to `reconnect_max_ms`.
    #[serde(default = "default_reconnect_min")]
    pub reconnect_min_ms: u64,
    /// Longest wait between two bind attempts.
    #[serde(default = "default_reconnect_max")]
    pub reconnect_max_ms: u64,
    /// Destinations (E.164 prefixes such as `+33`) routed through this connector.
    #[serde(default)]
    pub prefixes: Vec<String>,
    /// Carries every destination no connector's prefix matches.
    #[serde(default)]
    pub default: bool,
    /// The country (ISO 3166 alpha-2, such as `FR`) of the national numbers this SMSC
    /// delivers (TON national, or unknown with a leading zero): they become E.164 with it.
    /// Without it such numbers are kept as the SMSC wrote them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub country: Option<String>,
}

/// The longest wait for a response: the platform leases an SMS for 30 s while it is
/// submitted, and a part must be sent and answered within the lease.
pub(super) const MAX_RESPONSE_TIMEOUT_MS: u64 = 20_000;

fn default_throughput() -> u32 {
    50
}
fn default_window() -> u32 {
    10
}
fn default_enquire_link() -> u64 {
    30
}
fn default_response_timeout() -> u64 {
    10_000
}
fn default_reconnect_min() -> u64 {
    500
}
fn default_reconnect_max() -> u64 {
    30_000
}

impl SmppConfig {
    /// A transceiver connector to `host:port` with the defaults.
    pub fn new(name: &str, host: &str, port: u16, system_id: &str, password: &str) -> Self {
        Self {
            name: name.to_owned(),
            host: host.to_owned(),
            port,
            system_id: system_id.to_owned(),
            password: password.to_owned(),
            system_type: String::new(),
            bind: BindMode::Transceiver,
            tls: false,
            tls_ca_file: None,
            throughput: default_throughput(),
            window: default_window(),
            concatenation: Concatenation::Udh,
            enquire_link_secs: default_enquire_link(),
            response_timeout_ms: default_response_timeout(),
            reconnect_min_ms: default_reconnect_min(),
            reconnect_max_ms: default_reconnect_max(),
            prefixes: Vec::new(),
            default: false,
            country: None,
        }
    }

    /// Checks what the types alone do not.
    pub fn validate(&self) -> Result<(), String> {
        let name = &self.name;
        if name.is_empty() || name.len() > 32 {
            return Err("an SMPP connector needs a name of 1 to 32 characters".into());
        }
        if self.host.is_empty() || self.port == 0 {
            return Err(format!("SMPP connector {name}: host and port are required"));
        }
        if self.system_id.is_empty() || self.system_id.len() > 15 {
            return Err(format!(
                "SMPP connector {name}: system_id must be 1 to 15 characters"
            ));
        }
        if self.password.len() > 8 {
            return Err(format!(
                "SMPP connector {name}: password is at most 8 characters"
            ));
        }
        if self.system_type.len() > 12 {
            return Err(format!(
                "SMPP connector {name}: system_type is at most 12 characters"
            ));
        }
        if self.window == 0 {
            return Err(format!("SMPP connector {name}: window must be at least 1"));
        }
        if self.response_timeout_ms == 0 || self.enquire_link_secs == 0 {
            return Err(format!("SMPP connector {name}: timers must be positive"));
        }
        if self.response_timeout_ms > MAX_RESPONSE_TIMEOUT_MS {
            return Err(format!(
                "SMPP connector {name}: response_timeout_ms is at most {MAX_RESPONSE_TIMEOUT_MS}"
            ));
        }
        if let Some(country) = &self.country
            && !dialtone_domain::E164::is_plan_country(country)
        {
            return Err(format!(
                "SMPP connector {name}: country {country:?} is not an ISO 3166 alpha-2 code of the numbering plan"
            ));
        }
        if let Some(p) = self
            .prefixes
            .iter()
            .find(|p| !p.starts_with('+') || !p[1..].bytes().all(|b| b.is_ascii_digit()))
        {
            return Err(format!(
                "SMPP connector {name}: prefix {p:?} is not + and digits"
            ));
        }
        Ok(())
    }

    /// How long a request may wait for its response.
    pub fn response_timeout(&self) -> Duration {
        Duration::from_millis(self.response_timeout_ms)
    }
}
