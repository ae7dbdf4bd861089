//! How an operator describes the SIP side of a node: the node's listen address, RTP ports and
//! public address (`[sip_node]`), and each trunk (`[[sip]]` tables of the TOML file, or
//! `/admin/sip`): where it is, how to reach and authenticate with it, who may call in
//! through it, its codecs, the destinations it carries, and its caps.

use std::net::{IpAddr, SocketAddr};

use serde::{Deserialize, Serialize};

use crate::media::g711::Codec;

/// The SIP transport of a trunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Transport {
    /// UDP (the default of SIP).
    #[default]
    Udp,
    /// TCP.
    Tcp,
    /// TLS over TCP (`sips`).
    Tls,
}

impl Transport {
    /// The `transport` parameter of a SIP URI.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Udp => "udp",
            Self::Tcp => "tcp",
            Self::Tls => "tls",
        }
    }
}

/// How keys reach dialtone on a trunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DtmfMode {
    /// Telephone-events when the far end offers them, else tones in the audio.
    #[default]
    Auto,
    /// Telephone-events only (RFC 4733).
    Rfc4733,
    /// Tones in the audio, even when telephone-events are offered too.
    Inband,
}

/// A codec name of the configuration (`PCMU`, `PCMA`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
pub enum CodecName {
    /// G.711 µ-law.
    #[serde(rename = "PCMU", alias = "pcmu")]
    Pcmu,
    /// G.711 A-law.
    #[serde(rename = "PCMA", alias = "pcma")]
    Pcma,
}

impl CodecName {
    /// The codec.
    pub fn codec(self) -> Codec {
        match self {
            Self::Pcmu => Codec::Pcmu,
            Self::Pcma => Codec::Pcma,
        }
    }
}

/// One SIP trunk.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TrunkConfig {
    /// Name of the trunk (stored with each call it carries).
    pub name: String,
    /// Host name or address of the trunk's SIP server.
    pub host: String,
    /// Its SIP port.
    #[serde(default = "default_port")]
    pub port: u16,
    /// How to reach it.
    #[serde(default)]
    pub transport: Transport,
    /// Digest user name: answers the trunk's challenges on calls out and REGISTER, and
    /// lets a caller that authenticates with it in (with `password`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub username: Option<String>,
    /// Digest password.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password: Option<String>,
    /// Digest realm of our challenges (default: the trunk's name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub realm: Option<String>,
    /// Keep a registration with the trunk (calls then come to the address registered).
    #[serde(default)]
    pub register: bool,
    /// Seconds a registration asks to last; refreshed at three quarters of what the
    /// trunk grants.
    #[serde(default = "default_register_secs")]
    pub register_secs: u32,
    /// Addresses allowed to send calls in through this trunk (IPs or CIDR blocks); the
    /// trunk's host is always allowed.
    #[serde(default)]
    pub allowed_sources: Vec<String>,
    /// Codecs, in order of preference.
    #[serde(default = "default_codecs")]
    pub codecs: Vec<CodecName>,
    /// How keys arrive.
    #[serde(default)]
    pub dtmf: DtmfMode,
    /// Destinations (E.164 prefixes such as `+33`) dialled through this trunk.
    #[serde(default)]
    pub prefixes: Vec<String>,
    /// Carries every destination no trunk's prefix matches.
    #[serde(default)]
    pub default: bool,
    /// Most calls at once, in and out.
    #[serde(default = "default_max_calls")]
    pub max_calls: u32,
    /// Most new calls a second, in and out.
    #[serde(default = "default_cps")]
    pub calls_per_second: u32,
}

fn default_port() -> u16 {
    5060
}
fn default_register_secs() -> u32 {
    3600
}
fn default_codecs() -> Vec<CodecName> {
    vec![CodecName::Pcmu, CodecName::Pcma]
}
fn default_max_calls() -> u32 {
    100
}
fn default_cps() -> u32 {
    10
}

impl TrunkConfig {
    /// A UDP trunk to `host:port` with the defaults.
    pub fn new(name: &str, host: &str, port: u16) -> Self {
        Self {
            name: name.to_owned(),
            host: host.to_owned(),
            port,
            transport: Transport::Udp,
            username: None,
            password: None,
            realm: None,
            register: false,
            register_secs: default_register_secs(),
            allowed_sources: Vec::new(),
            codecs: default_codecs(),
            dtmf: DtmfMode::Auto,
            prefixes: Vec::new(),
            default: false,
            max_calls: default_max_calls(),
            calls_per_second: default_cps(),
        }
    }

    /// The codecs, in order.
    pub fn codecs(&self) -> Vec<Codec> {
        self.codecs.iter().map(|c| c.codec()).collect()
    }

    /// What is wrong with this trunk, if anything.
    pub fn problems(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.name.is_empty()
            || self.name.len() > 64
            || !self
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            out.push("name: 1 to 64 of a-z, A-Z, 0-9, - and _".to_owned());
        }
        if self.name == "simulated" {
            out.push("name: `simulated` is the simulated network's".to_owned());
        }
        if self.host.is_empty() || self.host.len() > 253 {
            out.push("host: required".to_owned());
        }
        if self.port == 0 {
            out.push("port: 1 to 65535".to_owned());
        }
        if self.username.is_some() != self.password.is_some() {
            out.push("username and password go together".to_owned());
        }
        if self.register && self.username.is_none() {
            out.push("register needs a username and password".to_owned());
        }
        if !(60..=86_400).contains(&self.register_secs) {
            out.push("register_secs: 60 to 86400".to_owned());
        }
        for source in &self.allowed_sources {
            if Cidr::parse(source).is_none() {
                out.push(format!(
                    "allowed_sources: {source:?} is not an address or CIDR"
                ));
            }
        }
        if self.codecs.is_empty() {
            out.push("codecs: at least one of PCMU, PCMA".to_owned());
        }
        for prefix in &self.prefixes {
            if !prefix.starts_with('+')
                || prefix.len() < 2
                || !prefix[1..].chars().all(|c| c.is_ascii_digit())
            {
                out.push(format!("prefixes: {prefix:?} is not +digits"));
            }
        }
        if self.max_calls == 0 || self.max_calls > 100_000 {
            out.push("max_calls: 1 to 100000".to_owned());
        }
        if self.calls_per_second == 0 || self.calls_per_second > 10_000 {
            out.push("calls_per_second: 1 to 10000".to_owned());
        }
        out
    }
}

/// An address block (`192.0.2.0/24`, `2001:db8::/32`, or one address).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cidr {
    net: IpAddr,
    bits: u8,
}

impl Cidr {
    /// Reads `addr` or `addr/bits`.
    pub fn parse(text: &str) -> Option<Self> {
        let (addr, bits) = match text.split_once('/') {
            Some((a, b)) => (a, Some(b.parse::<u8>().ok()?)),
            None => (text, None),
        };
        let net: IpAddr = addr.trim().parse().ok()?;
        let max = if net.is_ipv4() { 32 } else { 128 };
        let bits = bits.unwrap_or(max);
        (bits <= max).then_some(Self { net, bits })
    }

    /// Whether `ip` is in the block.
    pub fn contains(&self, ip: IpAddr) -> bool {
        match (self.net, ip) {
            (IpAddr::V4(n), IpAddr::V4(a)) => {
                let mask = u32::MAX.checked_shl(32 - u32::from(self.bits)).unwrap_or(0);
                u32::from(n) & mask == u32::from(a) & mask
            }
            (IpAddr::V6(n), IpAddr::V6(a)) => {
                let mask = u128::MAX
                    .checked_shl(128 - u32::from(self.bits))
                    .unwrap_or(0);
                u128::from(n) & mask == u128::from(a) & mask
            }
            (IpAddr::V4(_), IpAddr::V6(a)) => a
                .to_ipv4_mapped()
                .is_some_and(|v4| self.contains(IpAddr::V4(v4))),
            (IpAddr::V6(_), IpAddr::V4(_)) => false,
        }
    }
}

/// The SIP side of a node.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct NodeConfig {
    /// Where SIP is received (UDP and TCP on the same port).
    #[serde(default = "default_listen")]
    pub listen: SocketAddr,
    /// Where SIP over TLS is received, when it is (needs `tls_cert` and `tls_key`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls_listen: Option<SocketAddr>,
    /// PEM certificate chain of the TLS listener.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls_cert: Option<String>,
    /// PEM private key of the TLS listener.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls_key: Option<String>,
    /// First RTP port.
    #[serde(default = "default_rtp_first")]
    pub rtp_first: u16,
    /// Last RTP port.
    #[serde(default = "default_rtp_last")]
    pub rtp_last: u16,
    /// The address written in SDP and Contact (a node behind NAT gives its public
    /// address); default: the listen address, or the address the trunk is reached from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub public_ip: Option<IpAddr>,
    /// Packets the jitter buffer holds before it plays (20 ms each).
    #[serde(default = "default_jitter")]
    pub jitter_packets: usize,
    /// Longest call recording kept, in seconds (memory: 16 KB a second per recording).
    #[serde(default = "default_max_recording")]
    pub max_recording_secs: u64,
    /// Longest a dialled target may ring, in seconds, whatever the scenario asks.
    #[serde(default = "default_max_ring")]
    pub max_ring_secs: u64,
    /// A call whose far end sends no RTP this long (not on hold) is hung up, cause 102
    /// (0: never).
    #[serde(default = "default_media_timeout")]
    pub media_timeout_secs: u64,
}

fn default_listen() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 5060))
}
fn default_rtp_first() -> u16 {
    20_000
}
fn default_rtp_last() -> u16 {
    30_000
}
fn default_jitter() -> usize {
    3
}
fn default_max_recording() -> u64 {
    3600
}
fn default_max_ring() -> u64 {
    120
}
fn default_media_timeout() -> u64 {
    60
}

impl Default for NodeConfig {
    fn default() -> Self {
        Self {
            listen: default_listen(),
            tls_listen: None,
            tls_cert: None,
            tls_key: None,
            rtp_first: default_rtp_first(),
            rtp_last: default_rtp_last(),
            public_ip: None,
            jitter_packets: default_jitter(),
            max_recording_secs: default_max_recording(),
            max_ring_secs: default_max_ring(),
            media_timeout_secs: default_media_timeout(),
        }
    }
}

impl NodeConfig {
    /// What is wrong with this configuration, if anything.
    pub fn problems(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.rtp_first < 1024 || self.rtp_last < self.rtp_first + 1 {
            out.push("rtp ports: first 1024 or more, last above first".to_owned());
        }
        if self.tls_listen.is_some() && (self.tls_cert.is_none() || self.tls_key.is_none()) {
            out.push("tls_listen needs tls_cert and tls_key".to_owned());
        }
        if !(1..=50).contains(&self.jitter_packets) {
            out.push("jitter_packets: 1 to 50".to_owned());
        }
        if !(1..=86_400).contains(&self.max_recording_secs) {
            out.push("max_recording_secs: 1 to 86400".to_owned());
        }
        if self.media_timeout_secs > 86_400 {
            out.push("media_timeout_secs: 0 to 86400".to_owned());
        }
        if !(1..=3600).contains(&self.max_ring_secs) {
            out.push("max_ring_secs: 1 to 3600".to_owned());
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cidr_blocks() {
        let block = Cidr::parse("192.0.2.0/24").expect("cidr");
        assert!(block.contains("192.0.2.77".parse().expect("ip")));
        assert!(!block.contains("192.0.3.1".parse().expect("ip")));
        assert!(block.contains("::ffff:192.0.2.1".parse().expect("ip")));
        let one = Cidr::parse("127.0.0.1").expect("one");
        assert!(one.contains("127.0.0.1".parse().expect("ip")));
        assert!(!one.contains("127.0.0.2".parse().expect("ip")));
        assert!(
            Cidr::parse("0.0.0.0/0")
                .expect("all")
                .contains("8.8.8.8".parse().expect("ip"))
        );
        assert!(
            Cidr::parse("2001:db8::/32")
                .expect("v6")
                .contains("2001:db8::1".parse().expect("ip"))
        );
        assert_eq!(Cidr::parse("10.0.0.0/33"), None);
        assert_eq!(Cidr::parse("pbx.example"), None);
    }

    #[test]
    fn trunks_from_toml_and_their_problems() {
        let t: TrunkConfig = toml_like(
            r#"{"name":"carrier","host":"sip.example","prefixes":["+33"],"codecs":["PCMA"],"username":"u","password":"p","register":true}"#,
        );
        assert_eq!(t.port, 5060);
        assert_eq!(t.codecs(), [Codec::Pcma]);
        assert!(t.problems().is_empty(), "{:?}", t.problems());
        let mut bad = TrunkConfig::new("bad name", "", 0);
        bad.prefixes = vec!["33".into()];
        bad.allowed_sources = vec!["nowhere".into()];
        bad.password = Some("p".into());
        assert_eq!(bad.problems().len(), 6, "{:?}", bad.problems());
        assert!(
            serde_json::from_str::<TrunkConfig>(r#"{"name":"x","host":"y","nope":1}"#).is_err()
        );
    }

    fn toml_like(json: &str) -> TrunkConfig {
        serde_json::from_str(json).expect("trunk")
    }
}
