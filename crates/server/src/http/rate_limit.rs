//! Per-account request rate limits: a GCRA bucket (the token bucket kept as one "theoretical
//! arrival time") per account, in this node's memory, on the injected clock. Over the limit
//! a request is 429 `rate_limited` with `Retry-After`.
//!
//! Limits are per node: behind a balancer spreading an account over N nodes it gets up to N
//! times its rate (docs/decisions.md says how operators size them).

use std::collections::HashMap;
use std::sync::Mutex;

use dialtone_domain::Timestamp;
use dialtone_store::accounts::Account;

use crate::config::Config;
use crate::error::{AppError, ErrorCode};

/// The buckets of every account that made a request to this node.
#[derive(Debug, Default)]
pub struct RateLimiter {
    /// Account id -> theoretical arrival time, in microseconds.
    arrivals: Mutex<HashMap<i64, i64>>,
}

impl RateLimiter {
    /// Counts a request of `account` at `now`: Err(429 with Retry-After) when it is over its
    /// rate (the account's own, else the node's default; 0 means no limit).
    pub fn admit(
        &self,
        config: &Config,
        account: &Account,
        now: Timestamp,
    ) -> Result<(), AppError> {
        let rate = account.rate_limit.unwrap_or(config.rate_limit);
        if rate <= 0 {
            return Ok(());
        }
        let default_burst = (config.rate_burst > 0).then_some(config.rate_burst);
        let burst = account.rate_burst.or(default_burst).unwrap_or(rate).max(1);
        match self.check(account.id, rate, burst, now.millis().saturating_mul(1000)) {
            Ok(()) => Ok(()),
            Err(wait_us) => Err(AppError::too_many(
                ErrorCode::RateLimited,
                format!("over {rate} requests per second (burst {burst}): slow down"),
                u64::try_from((wait_us + 999_999) / 1_000_000)
                    .unwrap_or(1)
                    .max(1),
            )),
        }
    }

    /// GCRA: each request moves the arrival time on by 1/rate; a request is refused while
    /// the arrival time is more than (burst - 1)/rate ahead of now. Err(microseconds to wait).
    fn check(&self, account: i64, rate: i64, burst: i64, now_us: i64) -> Result<(), i64> {
        let interval = (1_000_000 / rate).max(1);
        let tolerance = interval.saturating_mul(burst - 1);
        let mut arrivals = self
            .arrivals
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let tat = arrivals
            .get(&account)
            .copied()
            .unwrap_or(now_us)
            .max(now_us);
        let ahead = tat - now_us;
        if ahead > tolerance {
            return Err(ahead - tolerance);
        }
        arrivals.insert(account, tat + interval);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_then_the_rate() {
        let l = RateLimiter::default();
        // 10/s, burst 3: three at once, the fourth waits 100 ms.
        for _ in 0..3 {
            assert_eq!(l.check(1, 10, 3, 0), Ok(()));
        }
        assert_eq!(l.check(1, 10, 3, 0), Err(100_000));
        assert_eq!(l.check(1, 10, 3, 99_999), Err(1));
        assert_eq!(l.check(1, 10, 3, 100_000), Ok(()));
        // Another account has its own bucket.
        assert_eq!(l.check(2, 10, 3, 0), Ok(()));
        // Idle time refills up to the burst, no more.
        for _ in 0..3 {
            assert_eq!(l.check(1, 10, 3, 10_000_000), Ok(()));
        }
        assert!(l.check(1, 10, 3, 10_000_000).is_err());
    }
}
