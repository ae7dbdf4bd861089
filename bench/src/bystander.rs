//! Another account's SMS during a load: one every half second, each followed until it is
//! `delivered`. One account's burst must not hold another account's SMS back; this
//! measures how long the bystander's SMS took from their 202, beside the load's figures.

use std::time::{Duration, Instant};

use crate::load;

/// Between two of the bystander's SMS.
const EVERY: Duration = Duration::from_millis(500);
/// Between two looks at one SMS.
const POLL: Duration = Duration::from_millis(50);
/// Longest wait for one SMS before the benchmark fails.
const GIVE_UP: Duration = Duration::from_secs(300);

/// Sends an SMS as the account of `key` every [`EVERY`] until `until`; returns, once each
/// is delivered, how long each took from its 202.
pub(crate) async fn run(
    base: String,
    key: String,
    until: Instant,
) -> anyhow::Result<Vec<Duration>> {
    let mut followed = Vec::new();
    while Instant::now() + EVERY / 2 < until {
        let t0 = Instant::now();
        let (status, v) = load::once_key(
            &base,
            "POST",
            "/v2.0/sms?to=%2B447700900666",
            &key,
            Some(r#"{"body":"Your code is 1234"}"#),
        )
        .await?;
        anyhow::ensure!(
            status == 202,
            "the bystander's SMS was answered {status}: {v}"
        );
        let sid = v["sid"].as_str().unwrap_or_default().to_owned();
        let (b, k) = (base.clone(), key.clone());
        followed.push(tokio::spawn(async move { follow(&b, &k, &sid, t0).await }));
        tokio::time::sleep(EVERY).await;
    }
    let mut took = Vec::with_capacity(followed.len());
    for f in followed {
        took.push(f.await??);
    }
    took.sort();
    Ok(took)
}

/// Waits until SMS `sid` is delivered; how long since `t0`.
async fn follow(base: &str, key: &str, sid: &str, t0: Instant) -> anyhow::Result<Duration> {
    let path = format!("/v2.0/sms/{sid}");
    loop {
        let (_, v) = load::once_key(base, "GET", &path, key, None).await?;
        if v["status"] == "delivered" {
            return Ok(t0.elapsed());
        }
        anyhow::ensure!(
            t0.elapsed() < GIVE_UP,
            "the bystander's SMS {sid} was not delivered in {GIVE_UP:?}"
        );
        tokio::time::sleep(POLL).await;
    }
}

/// The line the benchmark prints of the bystander's SMS.
pub(crate) fn summary(took: &[Duration]) -> String {
    match (took.first(), took.last()) {
        (Some(_), Some(max)) => format!(
            "another account's SMS during the load (one every {:.1} s): {}, delivered p50 {:.2} s, max {:.2} s after their 202 (the simulated network's timetable: 0.6 s)",
            EVERY.as_secs_f64(),
            took.len(),
            took[took.len() / 2].as_secs_f64(),
            max.as_secs_f64()
        ),
        _ => "another account's SMS during the load: none sent (the load was too short)".to_owned(),
    }
}
