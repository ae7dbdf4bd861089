//! Who is on the other end of a connection, and how many connections each address holds.
//!
//! Every request carries its peer's address ([`ClientAddr`], put there by the accept loop),
//! for the limits kept per client address: open connections here, failed authentications
//! in [`guard`](super::guard).

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

/// The address of the client that sent a request (its TCP peer).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct ClientAddr(pub IpAddr);

/// Marks a request that came over HTTPS (cookies it sets are `Secure`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct OverTls;

/// The client address of a request, when the accept loop put one there (an extractor that
/// never fails).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Client(pub Option<IpAddr>);

impl<S: Send + Sync> axum::extract::FromRequestParts<S> for Client {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        _: &S,
    ) -> Result<Self, Self::Rejection> {
        Ok(Self(parts.extensions.get::<ClientAddr>().map(|c| c.0)))
    }
}

/// The open connections, overall and per client address, under their limits.
#[derive(Debug)]
pub(crate) struct Connections {
    max_total: usize,
    max_per_client: usize,
    open: Mutex<Open>,
}

#[derive(Debug, Default)]
struct Open {
    total: usize,
    by_client: HashMap<IpAddr, usize>,
}

/// Why a connection was turned away.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refused {
    /// The server holds its most connections.
    Full,
    /// This client address holds its most connections.
    ClientFull,
}

/// One admitted connection; counted until dropped.
#[derive(Debug)]
pub(crate) struct Admitted {
    connections: Arc<Connections>,
    client: IpAddr,
}

impl Drop for Admitted {
    fn drop(&mut self) {
        let mut open = self.connections.lock();
        open.total = open.total.saturating_sub(1);
        if let Some(n) = open.by_client.get_mut(&self.client) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                open.by_client.remove(&self.client);
            }
        }
    }
}

impl Connections {
    /// At most `max_total` connections, `max_per_client` from one address.
    pub(crate) fn new(max_total: usize, max_per_client: usize) -> Arc<Self> {
        Arc::new(Self {
            max_total: max_total.max(1),
            max_per_client: max_per_client.max(1),
            open: Mutex::default(),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Open> {
        self.open.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Admits a connection from `client`, or says why not.
    pub(crate) fn admit(self: &Arc<Self>, client: IpAddr) -> Result<Admitted, Refused> {
        let mut open = self.lock();
        if open.total >= self.max_total {
            return Err(Refused::Full);
        }
        let mine = open.by_client.entry(client).or_insert(0);
        if *mine >= self.max_per_client {
            return Err(Refused::ClientFull);
        }
        *mine += 1;
        open.total += 1;
        Ok(Admitted {
            connections: self.clone(),
            client,
        })
    }

    /// Connections open now.
    #[cfg(test)]
    fn open(&self) -> usize {
        self.lock().total
    }
}

/// The default most connections: what the process may open (`RLIMIT_NOFILE`) less room for
/// the database, files and outbound requests, at most 8,192.
pub(crate) fn default_max_connections() -> usize {
    let soft = rustix::process::getrlimit(rustix::process::Resource::Nofile)
        .current
        .unwrap_or(1024);
    usize::try_from(soft.saturating_sub(256))
        .unwrap_or(usize::MAX)
        .clamp(64, 8_192)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_client_then_total() {
        let c = Connections::new(3, 2);
        let a: IpAddr = [10, 0, 0, 1].into();
        let b: IpAddr = [10, 0, 0, 2].into();
        let first = c.admit(a).expect("1");
        let _second = c.admit(a).expect("2");
        assert_eq!(c.admit(a).unwrap_err(), Refused::ClientFull);
        let _third = c.admit(b).expect("another client");
        assert_eq!(c.admit(b).unwrap_err(), Refused::Full);
        drop(first);
        assert_eq!(c.open(), 2);
        assert!(c.admit(a).is_ok(), "a slot came free");
    }
}
