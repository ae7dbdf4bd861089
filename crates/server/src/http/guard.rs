//! Authentication under attack: password checks (argon2, deliberately slow and memory-hard)
//! run a few at a time, an unknown login costs a check like a wrong password (no user
//! enumeration by timing), and a client address that fails to authenticate too often is
//! refused for a while before any check runs.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex, OnceLock};

use dialtone_domain::Timestamp;
use dialtone_domain::credentials::{hash_password, verify_password};
use tokio::sync::Semaphore;

use crate::error::{AppError, AppResult, ErrorCode};

/// Whether a presented secret (admin token, CSRF token) is the expected one, compared by
/// SHA-256 digest so the time taken does not depend on where the bytes differ.
pub(crate) fn same_secret(presented: &str, expected: &str) -> bool {
    use sha2::{Digest, Sha256};
    Sha256::digest(presented.as_bytes()) == Sha256::digest(expected.as_bytes())
}

/// Password checks waiting for a slot beyond which more are refused at once (429).
const MAX_WAITING: usize = 64;
/// The window failed authentications are counted in.
const WINDOW_MS: i64 = 60_000;
/// Client addresses tracked at once; the oldest windows go first when full.
const MAX_CLIENTS: usize = 65_536;

/// The argon2 checks in flight and the failures of each client address.
#[derive(Debug)]
pub struct AuthGuard {
    checks: Arc<Semaphore>,
    waiting: std::sync::atomic::AtomicUsize,
    max_failures: u32,
    failures: Mutex<HashMap<IpAddr, (i64, u32)>>,
}

impl AuthGuard {
    /// `concurrent` password checks at once; `max_failures` failed authentications per
    /// client address a minute (0: no limit).
    pub fn new(concurrent: usize, max_failures: u32) -> Self {
        Self {
            checks: Arc::new(Semaphore::new(concurrent.max(1))),
            waiting: Default::default(),
            max_failures,
            failures: Mutex::default(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<IpAddr, (i64, u32)>> {
        self.failures.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// 429 while `client` has failed too often in the current minute.
    pub fn check_client(&self, client: Option<IpAddr>, now: Timestamp) -> AppResult<()> {
        let (Some(ip), true) = (client, self.max_failures > 0) else {
            return Ok(());
        };
        let failures = self.lock();
        if let Some(&(start, count)) = failures.get(&ip)
            && now.millis() - start < WINDOW_MS
            && count >= self.max_failures
        {
            let retry = (start + WINDOW_MS - now.millis()).max(1_000) / 1_000;
            return Err(AppError::too_many(
                ErrorCode::RateLimited,
                "too many failed authentications from this address: wait before trying again",
                u64::try_from(retry).unwrap_or(60),
            ));
        }
        Ok(())
    }

    /// Counts a failed authentication of `client`.
    pub fn failed(&self, client: Option<IpAddr>, now: Timestamp) {
        let (Some(ip), true) = (client, self.max_failures > 0) else {
            return;
        };
        let mut failures = self.lock();
        if failures.len() >= MAX_CLIENTS && !failures.contains_key(&ip) {
            failures.retain(|_, (start, _)| now.millis() - *start < WINDOW_MS);
            if failures.len() >= MAX_CLIENTS {
                return;
            }
        }
        let entry = failures.entry(ip).or_insert((now.millis(), 0));
        if now.millis() - entry.0 >= WINDOW_MS {
            *entry = (now.millis(), 0);
        }
        entry.1 = entry.1.saturating_add(1);
    }

    /// Checks `password` against `stored` (or against a hash of nothing when the login is
    /// unknown, at the same cost), a few checks at a time, off the async threads.
    pub async fn verify(&self, password: String, stored: Option<String>) -> AppResult<bool> {
        use std::sync::atomic::Ordering;
        if self.waiting.fetch_add(1, Ordering::AcqRel) >= MAX_WAITING {
            self.waiting.fetch_sub(1, Ordering::AcqRel);
            return Err(AppError::too_many(
                ErrorCode::RateLimited,
                "too many password checks at once: try again shortly",
                1,
            ));
        }
        let permit = self.checks.clone().acquire_owned().await;
        self.waiting.fetch_sub(1, Ordering::AcqRel);
        let permit = permit.map_err(AppError::internal)?;
        let known = stored.is_some();
        let hash = stored.unwrap_or_else(|| decoy().to_owned());
        let ok = tokio::task::spawn_blocking(move || {
            let _permit = permit;
            verify_password(&password, &hash)
        })
        .await
        .unwrap_or(false);
        Ok(ok && known)
    }
}

/// The hash an unknown login is checked against: made once, with the same parameters as
/// every stored password, so the check costs the same.
fn decoy() -> &'static str {
    static DECOY: OnceLock<String> = OnceLock::new();
    DECOY.get_or_init(|| hash_password(&hex::encode(rand::random::<[u8; 16]>())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_lock_an_address_out_for_the_rest_of_the_minute() {
        let guard = AuthGuard::new(1, 3);
        let ip: IpAddr = [192, 0, 2, 7].into();
        let other: IpAddr = [192, 0, 2, 8].into();
        let t = Timestamp::from_millis(1_800_000_000_000);
        for _ in 0..3 {
            assert!(guard.check_client(Some(ip), t).is_ok());
            guard.failed(Some(ip), t);
        }
        let refused = guard.check_client(Some(ip), t.plus_ms(10)).unwrap_err();
        assert_eq!(refused.code, ErrorCode::RateLimited);
        assert!(guard.check_client(Some(other), t).is_ok(), "per address");
        assert!(guard.check_client(Some(ip), t.plus_ms(WINDOW_MS)).is_ok());
    }
}
