//! Callers that are not a trunk's address may still come in with a trunk's digest
//! credentials: the nonces of our challenges (signed with a secret of the node, valid five
//! minutes, so any of them checks without being kept) and the lockout of an address that
//! keeps failing, by a wrong answer or by not being a trunk at all (ten a minute; then it
//! is not answered for the rest of the minute).

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use hmac::{Hmac, Mac};
use sha2::Sha256;
use tokio::time::Instant;

/// Failed authentications from one address a minute before it is refused outright.
pub(crate) const MAX_FAILURES: u32 = 10;
/// How long a nonce of ours stays valid.
const NONCE_TTL: Duration = Duration::from_secs(300);

/// Digest challenges of callers that are not a trunk's address: signed nonces, and a
/// lockout of addresses that keep failing.
pub(crate) struct AuthGuard {
    secret: [u8; 32],
    failures: Mutex<HashMap<IpAddr, (Instant, u32)>>,
}

impl Default for AuthGuard {
    fn default() -> Self {
        Self {
            secret: rand::random(),
            failures: Mutex::new(HashMap::new()),
        }
    }
}

impl AuthGuard {
    fn mac(&self, stamp: u64) -> String {
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&self.secret)
            .unwrap_or_else(|_| unreachable!("HMAC takes a key of any length"));
        mac.update(&stamp.to_be_bytes());
        hex::encode(&mac.finalize().into_bytes()[..16])
    }

    pub(crate) fn nonce(&self) -> String {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        format!("{now:x}.{}", self.mac(now))
    }

    pub(crate) fn nonce_is_ours(&self, nonce: &str) -> bool {
        let Some((stamp, mac)) = nonce.split_once('.') else {
            return false;
        };
        let Ok(stamp) = u64::from_str_radix(stamp, 16) else {
            return false;
        };
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        now.saturating_sub(stamp) <= NONCE_TTL.as_secs() && self.mac(stamp) == mac
    }

    pub(crate) fn locked_out(&self, ip: IpAddr) -> bool {
        let failures = self.failures.lock().unwrap_or_else(|p| p.into_inner());
        failures.get(&ip).is_some_and(|(since, n)| {
            since.elapsed() < Duration::from_secs(60) && *n >= MAX_FAILURES
        })
    }

    pub(crate) fn failed(&self, ip: IpAddr) {
        let mut failures = self.failures.lock().unwrap_or_else(|p| p.into_inner());
        if failures.len() > 10_000 {
            failures.retain(|_, (since, _)| since.elapsed() < Duration::from_secs(60));
        }
        let entry = failures.entry(ip).or_insert((Instant::now(), 0));
        if entry.0.elapsed() >= Duration::from_secs(60) {
            *entry = (Instant::now(), 0);
        }
        entry.1 += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nonces_are_signed_and_expire() {
        let guard = AuthGuard::default();
        let nonce = guard.nonce();
        assert!(guard.nonce_is_ours(&nonce));
        assert!(
            !AuthGuard::default().nonce_is_ours(&nonce),
            "another node's secret"
        );
        assert!(!guard.nonce_is_ours("0.abcdef"));
        assert!(!guard.nonce_is_ours("nonsense"));
        let ip: IpAddr = "192.0.2.1".parse().expect("ip");
        for _ in 0..MAX_FAILURES {
            assert!(!guard.locked_out(ip));
            guard.failed(ip);
        }
        assert!(guard.locked_out(ip));
    }
}
