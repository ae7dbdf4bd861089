//! Where the server's own requests may go: webhook deliveries and scenario fetches are made
//! for tenants, to addresses tenants choose, so they must not reach what a tenant should not:
//! the host's loopback services, the private network around it, a cloud's metadata service
//! (169.254.169.254), or this server's own `/admin` and `/metrics`.
//!
//! The check is made on the address actually connected to: every name is resolved here and
//! each address checked (a name resolving to 127.0.0.1 is refused like 127.0.0.1 itself), and
//! a URL whose host is an address (in any spelling the URL parser accepts: `2130706433`,
//! `0x7f000001`, `0177.0.0.1`, `127.1`, `[::ffff:127.0.0.1]`) is checked as that address.
//! No proxy is used, and redirects are not followed, so nothing else picks the address.
//!
//! Private destinations (loopback, RFC 1918, link-local, CGNAT, unique-local, unspecified,
//! and the other special-use ranges) are refused unless the operator allows them: by default
//! they are allowed when the server listens on loopback only (a laptop, whose webhook
//! receivers are local) and refused otherwise; `--outbound-allow` lists the networks of the
//! operator's own receivers, allowed whatever the mode.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;

use reqwest::dns::{Addrs, Name, Resolve, Resolving};

/// Whether private destinations are allowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Private {
    /// Allowed (a laptop deployment).
    Allow,
    /// Refused (a deployment that listens beyond loopback).
    Deny,
}

/// A network: an address and its prefix length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Network {
    addr: IpAddr,
    prefix: u8,
}

impl Network {
    /// Parses `10.0.0.0/8`, `2001:db8::/32` or a single address.
    pub fn parse(text: &str) -> Result<Self, String> {
        let (addr, prefix) = match text.split_once('/') {
            Some((a, p)) => (a, Some(p)),
            None => (text, None),
        };
        let addr: IpAddr = addr
            .trim()
            .parse()
            .map_err(|_| format!("{text:?} is not an address or a network"))?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            Some(p) => p
                .trim()
                .parse::<u8>()
                .ok()
                .filter(|p| *p <= max)
                .ok_or_else(|| format!("{text:?}: the prefix length must be 0 to {max}"))?,
            None => max,
        };
        Ok(Self { addr, prefix })
    }

    fn contains(&self, ip: IpAddr) -> bool {
        match (self.addr, canonical(ip)) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => {
                let mask = u32::MAX
                    .checked_shl(32 - u32::from(self.prefix))
                    .unwrap_or(0);
                u32::from(net) & mask == u32::from(ip) & mask
            }
            (IpAddr::V6(net), IpAddr::V6(ip)) => {
                let mask = u128::MAX
                    .checked_shl(128 - u32::from(self.prefix))
                    .unwrap_or(0);
                u128::from(net) & mask == u128::from(ip) & mask
            }
            _ => false,
        }
    }
}

/// An IPv4 address written inside an IPv6 one (mapped, compatible, NAT64) as itself.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return IpAddr::V4(v4);
            }
            let s = v6.segments();
            // ::a.b.c.d (deprecated compatible form) and 64:ff9b::a.b.c.d (NAT64).
            let embedded = Ipv4Addr::from(((u32::from(s[6])) << 16) | u32::from(s[7]));
            if (s[..6] == [0, 0, 0, 0, 0, 0] && !v6.is_loopback() && !v6.is_unspecified())
                || s[..6] == [0x64, 0xff9b, 0, 0, 0, 0]
            {
                return IpAddr::V4(embedded);
            }
            IpAddr::V6(v6)
        }
        v4 => v4,
    }
}

/// Whether `ip` is not a public unicast address: loopback, private, link-local (cloud
/// metadata), CGNAT, unique-local, unspecified, multicast, broadcast, documentation,
/// benchmarking or reserved.
pub fn is_private(ip: IpAddr) -> bool {
    match canonical(ip) {
        IpAddr::V4(v4) => {
            let [a, b, c, _] = v4.octets();
            v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_multicast()
                || v4.is_documentation()
                || a == 0
                || (a == 100 && (64..128).contains(&b))
                || (a == 192 && b == 0 && c == 0)
                || (a == 198 && (b == 18 || b == 19))
                || a >= 240
        }
        IpAddr::V6(v6) => {
            let first = v6.segments()[0];
            v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (first & 0xfe00) == 0xfc00
                || (first & 0xffc0) == 0xfe80
                || (first == 0x2001 && v6.segments()[1] == 0x0db8)
        }
    }
}

/// The destinations this server's requests may reach.
#[derive(Debug, Clone)]
pub struct Outbound {
    private: Private,
    allow: Vec<Network>,
    /// This server's own port: its `/admin` and `/metrics` are never fetched.
    own_port: u16,
}

impl Outbound {
    /// The policy for a server listening on `listen`.
    pub fn new(private: Private, allow: Vec<Network>, listen: SocketAddr) -> Self {
        Self {
            private,
            allow,
            own_port: listen.port(),
        }
    }

    /// The default mode for a server listening on `listen`: private destinations allowed
    /// when it listens on loopback only.
    pub fn default_mode(listen: SocketAddr) -> Private {
        if listen.ip().is_loopback() {
            Private::Allow
        } else {
            Private::Deny
        }
    }

    /// Whether a request may connect to `ip`.
    pub fn check_ip(&self, ip: IpAddr) -> Result<(), String> {
        if self.allow.iter().any(|n| n.contains(ip)) {
            return Ok(());
        }
        if self.private == Private::Deny && is_private(ip) {
            return Err(format!(
                "destination not allowed: {ip} is a private or reserved address"
            ));
        }
        Ok(())
    }

    /// Whether a request may go to `url`: http or https, a host whose address (when it is
    /// one) is allowed, and never this server's `/admin` or `/metrics`.
    pub fn check_url(&self, url: &url::Url) -> Result<(), String> {
        if !matches!(url.scheme(), "http" | "https") {
            return Err("only http and https URLs are allowed".into());
        }
        let path = url.path();
        if url.port_or_known_default() == Some(self.own_port)
            && (path.starts_with("/admin") || path.starts_with("/metrics"))
        {
            return Err("destination not allowed: this server's operator routes".into());
        }
        match url.host() {
            Some(url::Host::Ipv4(v4)) => self.check_ip(IpAddr::V4(v4)),
            Some(url::Host::Ipv6(v6)) => self.check_ip(IpAddr::V6(v6)),
            Some(url::Host::Domain(_)) => Ok(()),
            None => Err("the URL has no host".into()),
        }
    }

    /// A resolver that keeps only the allowed addresses of a name (none: an error).
    pub fn resolver(self: &Arc<Self>) -> Arc<impl Resolve + 'static> {
        Arc::new(Resolver(self.clone()))
    }
}

struct Resolver(Arc<Outbound>);

impl Resolve for Resolver {
    fn resolve(&self, name: Name) -> Resolving {
        let policy = self.0.clone();
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let found: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let allowed: Vec<SocketAddr> = found
                .iter()
                .copied()
                .filter(|a| policy.check_ip(a.ip()).is_ok())
                .collect();
            if allowed.is_empty() {
                let why = match found.first() {
                    Some(a) => policy
                        .check_ip(a.ip())
                        .err()
                        .unwrap_or_else(|| "destination not allowed".into()),
                    None => format!("{host} resolves to no address"),
                };
                return Err(format!("{host}: {why}").into());
            }
            let addrs: Addrs = Box::new(allowed.into_iter());
            Ok(addrs)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deny() -> Outbound {
        Outbound::new(
            Private::Deny,
            vec![Network::parse("10.9.0.0/16").unwrap()],
            "0.0.0.0:8080".parse().unwrap(),
        )
    }

    #[test]
    fn every_spelling_of_loopback_is_refused() {
        let policy = deny();
        for url in [
            "http://127.0.0.1/",
            "http://2130706433/",
            "http://0x7f000001/",
            "http://0177.0.0.1/",
            "http://127.1/",
            "http://[::ffff:127.0.0.1]/",
            "http://[::1]/",
            "http://169.254.169.254/latest/meta-data/",
            "http://10.0.0.1/",
            "http://100.64.0.1/",
            "http://[fd00::1]/",
            "http://0.0.0.0/",
            "http://[64:ff9b::7f00:1]/",
        ] {
            let parsed = url::Url::parse(url).unwrap();
            assert!(policy.check_url(&parsed).is_err(), "{url}");
        }
        assert!(
            policy
                .check_url(&url::Url::parse("http://93.184.215.14/").unwrap())
                .is_ok()
        );
        assert!(
            policy
                .check_url(&url::Url::parse("http://10.9.1.2/hook").unwrap())
                .is_ok(),
            "the operator's allowlist"
        );
        assert!(
            policy
                .check_url(&url::Url::parse("ftp://93.184.215.14/").unwrap())
                .is_err()
        );
    }

    #[test]
    fn own_operator_routes_are_never_fetched() {
        let open = Outbound::new(
            Private::Allow,
            Vec::new(),
            "127.0.0.1:8080".parse().unwrap(),
        );
        assert!(
            open.check_url(&url::Url::parse("http://127.0.0.1:8080/v2.0/ping").unwrap())
                .is_ok()
        );
        for path in ["/admin/accounts", "/metrics", "/admin"] {
            let u = url::Url::parse(&format!("http://localhost:8080{path}")).unwrap();
            assert!(open.check_url(&u).is_err(), "{path}");
        }
    }

    #[test]
    fn networks_parse_and_match() {
        assert!(
            Network::parse("10.0.0.0/8")
                .unwrap()
                .contains("10.200.3.4".parse().unwrap())
        );
        assert!(
            !Network::parse("10.0.0.0/8")
                .unwrap()
                .contains("11.0.0.1".parse().unwrap())
        );
        assert!(
            Network::parse("::1")
                .unwrap()
                .contains("::1".parse().unwrap())
        );
        assert!(Network::parse("10.0.0.0/33").is_err());
        assert!(Network::parse("nonsense").is_err());
    }
}
