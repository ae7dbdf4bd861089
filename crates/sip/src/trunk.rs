//! A trunk while it runs: its configuration, the addresses its host resolves to (refreshed),
//! who may call in through it, its caps on calls at once and a second, and its health (the
//! registration's state, the last error) for the operator.

use std::net::IpAddr;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Serialize;
use tokio::time::Instant;

use crate::cause;
use crate::config::{Cidr, TrunkConfig};
use crate::platform::Refusal;

/// What the operator sees of a trunk.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct TrunkHealth {
    /// The addresses its host resolved to last.
    pub addresses: Vec<String>,
    /// Registered now (None: the trunk does not register).
    pub registered: Option<bool>,
    /// The last error (resolution, registration), if the last attempt failed.
    pub last_error: Option<String>,
    /// Calls on the trunk now.
    pub calls: u32,
}

/// A running trunk.
#[derive(Debug)]
pub struct Trunk {
    /// Its configuration.
    pub config: TrunkConfig,
    sources: Vec<Cidr>,
    addresses: Mutex<Vec<IpAddr>>,
    active: AtomicU32,
    second: Mutex<(Instant, u32)>,
    health: Mutex<TrunkHealth>,
}

/// A call's place on its trunk, given back when the call ends.
#[derive(Debug)]
pub struct Slot(Arc<Trunk>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.active.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Trunk {
    /// A trunk of `config` (its host is resolved by [`Trunk::resolve`]).
    pub fn new(config: TrunkConfig) -> Self {
        let sources = config
            .allowed_sources
            .iter()
            .filter_map(|s| Cidr::parse(s))
            .collect();
        Self {
            config,
            sources,
            addresses: Mutex::new(Vec::new()),
            active: AtomicU32::new(0),
            second: Mutex::new((Instant::now(), 0)),
            health: Mutex::new(TrunkHealth::default()),
        }
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.config.name
    }

    /// Resolves the trunk's host again.
    pub async fn resolve(&self) {
        let target = (self.config.host.as_str(), self.config.port);
        match tokio::time::timeout(Duration::from_secs(5), tokio::net::lookup_host(target)).await {
            Ok(Ok(found)) => {
                let mut ips: Vec<IpAddr> = found.map(|a| a.ip()).collect();
                ips.sort();
                ips.dedup();
                self.with_health(|h| {
                    h.addresses = ips.iter().map(ToString::to_string).collect();
                    if h.last_error
                        .as_deref()
                        .is_some_and(|e| e.starts_with("resolve"))
                    {
                        h.last_error = None;
                    }
                });
                *self.addresses.lock().unwrap_or_else(|p| p.into_inner()) = ips;
            }
            Ok(Err(e)) => self.failed(format!("resolve {}: {e}", self.config.host)),
            Err(_) => self.failed(format!("resolve {}: timed out", self.config.host)),
        }
    }

    /// Whether a request from `ip` comes from this trunk (its host, or an allowed block).
    pub fn allows(&self, ip: IpAddr) -> bool {
        let ip = match ip {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
            v4 => v4,
        };
        self.sources.iter().any(|c| c.contains(ip))
            || self
                .addresses
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .contains(&ip)
    }

    /// Takes a place for a new call, within the caps; refused with cause 34 beyond them.
    pub fn take(self: &Arc<Self>) -> Result<Slot, Refusal> {
        {
            let mut second = self.second.lock().unwrap_or_else(|p| p.into_inner());
            let now = Instant::now();
            if now.duration_since(second.0) >= Duration::from_secs(1) {
                *second = (now, 0);
            }
            if second.1 >= self.config.calls_per_second {
                return Err(Refusal::new(
                    cause::NO_CIRCUIT,
                    "the trunk's calls per second are used up",
                ));
            }
            second.1 += 1;
        }
        let before = self.active.fetch_add(1, Ordering::AcqRel);
        if before >= self.config.max_calls {
            self.active.fetch_sub(1, Ordering::AcqRel);
            return Err(Refusal::new(
                cause::NO_CIRCUIT,
                "the trunk is at its call cap",
            ));
        }
        Ok(Slot(self.clone()))
    }

    /// Calls on the trunk now.
    pub fn calls(&self) -> u32 {
        self.active.load(Ordering::Acquire)
    }

    /// Its health now.
    pub fn health(&self) -> TrunkHealth {
        let mut h = self
            .health
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        h.calls = self.calls();
        h
    }

    /// Changes its health.
    pub fn with_health(&self, f: impl FnOnce(&mut TrunkHealth)) {
        f(&mut self.health.lock().unwrap_or_else(|p| p.into_inner()));
    }

    /// Records an error for the operator.
    pub fn failed(&self, error: String) {
        tracing::warn!(trunk = %self.config.name, %error, "sip trunk");
        self.with_health(|h| h.last_error = Some(error));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn caps_and_sources() {
        let mut config = TrunkConfig::new("t", "127.0.0.1", 5060);
        config.max_calls = 2;
        config.calls_per_second = 3;
        config.allowed_sources = vec!["10.1.0.0/16".into()];
        let trunk = Arc::new(Trunk::new(config));
        trunk.resolve().await;
        assert!(trunk.allows("127.0.0.1".parse().expect("ip")));
        assert!(trunk.allows("10.1.2.3".parse().expect("ip")));
        assert!(trunk.allows("::ffff:10.1.2.3".parse().expect("ip")));
        assert!(!trunk.allows("10.2.0.1".parse().expect("ip")));
        let a = trunk.take().expect("a");
        let _b = trunk.take().expect("b");
        assert_eq!(trunk.take().err().map(|r| r.cause), Some(34), "at the cap");
        drop(a);
        assert_eq!(trunk.calls(), 1);
        // The third call of this second was the refused one: the fourth is over the rate.
        assert!(trunk.take().is_err(), "over the calls per second");
    }
}
