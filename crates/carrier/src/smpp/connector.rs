//! A connector: its binds kept up (reconnecting with backoff), its `submit_sm` paced by
//! throughput, window and the SMSC's throttling, and the `deliver_sm` of its sessions turned
//! into events.
//!
//! Every connector paces and waits on its own: a slow or silent SMSC holds up only the parts
//! submitted to it, each of which gives up (refused for now) by the deadline its caller set.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use rusmpp::{CommandStatus, Pdu};
use tokio::sync::{Semaphore, mpsc, watch};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::config::{BindMode, SmppConfig};
use super::event::CarrierEvent;
use super::health::{BindHealth, Health};
use super::pacing::Pacer;
use super::session::{BindKind, Delivery, Session};
use super::submit::{self, Refusal};
use crate::{Accepted, BoxFuture, Carrier, OutboundSms, Rejected};

/// Most time a part may wait for its throughput slot before it is refused for now: past
/// this it waits in the database instead.
const MAX_BACKLOG: Duration = Duration::from_secs(15);

/// Most parts waiting in one connector at once (for the window, a slot or an answer);
/// more are refused for now and wait in the database.
const MAX_QUEUED: usize = 10_000;

/// Tries of one part the SMSC cannot take now (queue full, system error) before it is
/// refused for now; throttled parts are tried again at the connector's slower pace until
/// their deadline instead.
const PART_TRIES: u32 = 4;

/// An SMPP connector; cheap to clone.
#[derive(Clone)]
pub struct Smpp {
    inner: Arc<Inner>,
}

struct Inner {
    config: SmppConfig,
    /// The session submits go through, when bound.
    transmitter: watch::Sender<Option<Arc<Session>>>,
    /// Whether the session deliveries come through is bound.
    receiver: watch::Sender<bool>,
    window: Semaphore,
    pacer: Pacer,
    /// Parts of the submissions in progress (waiting for the window, a slot or an answer).
    queued: AtomicUsize,
    /// Each bind's state, for the operator.
    health: Vec<(BindKind, Health)>,
    stop: CancellationToken,
}

/// Counts a part as queued while it lasts.
struct Queued<'a> {
    inner: &'a Inner,
}

impl<'a> Queued<'a> {
    fn join(inner: &'a Inner) -> (Self, usize) {
        let now = inner.queued.fetch_add(1, Ordering::Relaxed) + 1;
        (Self { inner }, now)
    }
}

impl Drop for Queued<'_> {
    fn drop(&mut self) {
        self.inner.queued.fetch_sub(1, Ordering::Relaxed);
    }
}

impl std::fmt::Debug for Smpp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Smpp")
            .field("name", &self.inner.config.name)
            .field("bound", &self.is_bound())
            .finish()
    }
}

impl Smpp {
    /// Starts the connector's binds in the background (on the current tokio runtime);
    /// receipts and inbound SMS arrive on `events`.
    pub fn start(config: SmppConfig, events: mpsc::Sender<CarrierEvent>) -> Self {
        let kinds: &[BindKind] = match config.bind {
            BindMode::Transceiver => &[BindKind::Transceiver],
            BindMode::TransmitterReceiver => &[BindKind::Transmitter, BindKind::Receiver],
        };
        let inner = Arc::new(Inner {
            window: Semaphore::new(config.window.max(1) as usize),
            transmitter: watch::channel(None).0,
            receiver: watch::channel(false).0,
            pacer: Pacer::new(config.throughput),
            queued: AtomicUsize::new(0),
            health: kinds.iter().map(|&k| (k, Health::new(k.name()))).collect(),
            stop: CancellationToken::new(),
            config,
        });
        let (deliveries, deliveries_rx) = mpsc::channel(256);
        tokio::spawn(super::delivery::receive_loop(
            inner.config.clone(),
            deliveries_rx,
            events,
        ));
        for (index, _) in inner.health.iter().enumerate() {
            tokio::spawn(keep_bound(inner.clone(), index, deliveries.clone()));
        }
        Self { inner }
    }

    /// The connector's configuration.
    pub fn config(&self) -> &SmppConfig {
        &self.inner.config
    }

    /// Whether submits can leave now.
    pub fn is_bound(&self) -> bool {
        self.session().is_some()
    }

    /// Whether deliveries can arrive now.
    pub fn is_receiving(&self) -> bool {
        *self.inner.receiver.borrow()
    }

    /// Each bind's state: up or down, the last error, the next attempt.
    pub fn binds(&self) -> Vec<BindHealth> {
        self.inner.health.iter().map(|(_, h)| h.get()).collect()
    }

    /// Parts waiting in the connector now (for the window, a slot or an answer).
    pub fn queued(&self) -> usize {
        self.inner.queued.load(Ordering::Relaxed)
    }

    /// The gap the SMSC's throttling adds between two submits now (zero: none).
    pub fn throttle(&self) -> Duration {
        self.inner.pacer.throttle()
    }

    /// Waits until the submit bind is up, at most `timeout`; whether it is.
    pub async fn wait_bound(&self, timeout: Duration) -> bool {
        let mut rx = self.inner.transmitter.subscribe();
        let up = rx.wait_for(|s| s.as_ref().is_some_and(|s| !s.is_closed()));
        matches!(tokio::time::timeout(timeout, up).await, Ok(Ok(_)))
    }

    /// Unbinds and stops reconnecting.
    pub async fn stop(&self) {
        self.inner.stop.cancel();
        let session = self.inner.transmitter.borrow().clone();
        if let Some(s) = session {
            s.close().await;
        }
    }

    /// Submits every part of `sms` at once (they share the window), answered within a
    /// minute: the message ids in part order, or the first refusal. The platform submits
    /// part by part through [`Carrier::submit_part`]; this is for tools and tests.
    pub async fn submit(&self, sms: &OutboundSms) -> Result<Accepted, Rejected> {
        let until = Instant::now() + Duration::from_secs(60);
        let parts = (1..=sms.parts.len()).map(|part| self.submit_one(sms, part, until));
        let message_ids = futures_util::future::try_join_all(parts).await?;
        Ok(Accepted {
            message_ids,
            network: self.inner.config.name.clone(),
        })
    }

    fn session(&self) -> Option<Arc<Session>> {
        self.inner
            .transmitter
            .borrow()
            .clone()
            .filter(|s| !s.is_closed())
    }

    fn refused_for_now(&self, why: impl std::fmt::Display) -> Rejected {
        Rejected {
            permanent: false,
            reason: format!("{}: {why}", self.inner.config.name),
        }
    }

    /// Submits one part: waits for the window and a slot, sends, and sends again what the
    /// SMSC refuses for now (throttled: at the slower pace, until the deadline; otherwise a
    /// few times). Answers by `until`.
    async fn submit_one(
        &self,
        sms: &OutboundSms,
        part: usize,
        until: Instant,
    ) -> Result<String, Rejected> {
        let config = &self.inner.config;
        let pdu = submit::pdu(config, sms, part).map_err(|reason| Rejected {
            permanent: true,
            reason,
        })?;
        let (_queued, waiting) = Queued::join(&self.inner);
        if waiting > MAX_QUEUED {
            return Err(self.refused_for_now("too many parts waiting, later"));
        }
        if self.backlog(waiting) > MAX_BACKLOG {
            return Err(self.refused_for_now("throughput limit reached, later"));
        }
        // The last instant a part may leave and still be answered by `until`.
        let send_by = until
            .checked_sub(config.response_timeout())
            .unwrap_or_else(Instant::now);
        let mut later_tries = 0;
        let mut wait = Duration::from_millis(100);
        loop {
            let session = self
                .session()
                .ok_or_else(|| self.refused_for_now("bind down"))?;
            let permit = match tokio::time::timeout_at(send_by, self.inner.window.acquire()).await {
                Ok(Ok(permit)) => permit,
                Ok(Err(_)) => return Err(self.refused_for_now("connector stopped")),
                Err(_) => return Err(self.refused_for_now("window full until the deadline")),
            };
            let slot = self
                .inner
                .pacer
                .reserve(send_by)
                .ok_or_else(|| self.refused_for_now("no send slot before the deadline"))?;
            // A timer even for a slot already due waits for the timer's next tick (1 ms).
            if slot > Instant::now() {
                tokio::time::sleep_until(slot).await;
            }
            let deadline = (Instant::now() + config.response_timeout()).min(until);
            let resp = session.request(Pdu::SubmitSm(pdu.clone()), deadline).await;
            drop(permit);
            let resp = resp.map_err(|e| self.refused_for_now(e))?;
            let status = resp.status();
            if status == CommandStatus::EsmeRok {
                self.inner.pacer.accepted();
                return match resp.pdu() {
                    Some(Pdu::SubmitSmResp(r)) => Ok(r.message_id().as_str().to_owned()),
                    _ => Ok(String::new()),
                };
            }
            let code = u32::from(status);
            let reason = format!("submit_sm refused with {status:?} (0x{code:08x})");
            match submit::refusal(status) {
                Refusal::Never => {
                    return Err(Rejected {
                        permanent: true,
                        reason: format!("{}: {reason}", config.name),
                    });
                }
                // Tried again at the next slot, which the throttling pushed back.
                Refusal::Throttled => self.inner.pacer.throttled(),
                Refusal::Later => {
                    later_tries += 1;
                    if later_tries >= PART_TRIES || Instant::now() + wait > send_by {
                        return Err(self.refused_for_now(reason));
                    }
                    tokio::time::sleep(wait).await;
                    wait *= 2;
                }
            }
        }
    }

    /// How long `parts` waiting parts take to leave at the throughput limit.
    fn backlog(&self, parts: usize) -> Duration {
        let step = self.inner.pacer.step();
        step * u32::try_from(parts.saturating_sub(1)).unwrap_or(u32::MAX)
    }
}

impl Carrier for Smpp {
    fn name(&self) -> &str {
        &self.inner.config.name
    }

    fn submit_part<'a>(
        &'a self,
        sms: &'a OutboundSms,
        part: usize,
        until: Instant,
    ) -> BoxFuture<'a, Result<String, Rejected>> {
        Box::pin(self.submit_one(sms, part, until))
    }
}

/// Binds, waits for the session to end, binds again, with a doubling wait after failures;
/// keeps the bind's health up to date.
async fn keep_bound(inner: Arc<Inner>, index: usize, deliveries: mpsc::Sender<Delivery>) {
    let config = &inner.config;
    let (kind, health) = (&inner.health[index].0, &inner.health[index].1);
    let kind = *kind;
    let min = Duration::from_millis(config.reconnect_min_ms.max(1));
    let max = Duration::from_millis(config.reconnect_max_ms.max(config.reconnect_min_ms));
    let mut wait = min;
    while !inner.stop.is_cancelled() {
        let opened = tokio::select! {
            _ = inner.stop.cancelled() => break,
            s = Session::open(config, kind, deliveries.clone()) => s,
        };
        match opened {
            Ok(session) => {
                tracing::info!(connector = %config.name, ?kind, "smpp: bound");
                health.bound();
                wait = min;
                if kind != BindKind::Receiver {
                    inner.transmitter.send_replace(Some(session.clone()));
                }
                if kind != BindKind::Transmitter {
                    inner.receiver.send_replace(true);
                }
                tokio::select! {
                    _ = inner.stop.cancelled() => { session.close().await; }
                    _ = session.closed() => {}
                }
                if kind != BindKind::Receiver {
                    inner.transmitter.send_replace(None);
                }
                if kind != BindKind::Transmitter {
                    inner.receiver.send_replace(false);
                }
                let reason = session
                    .close_reason()
                    .unwrap_or_else(|| "session ended".to_owned());
                tracing::warn!(connector = %config.name, ?kind, %reason, "smpp: session ended");
                health.down(reason, wait);
            }
            Err(e) => {
                tracing::warn!(connector = %config.name, ?kind, error = %e, "smpp: bind failed");
                health.down(e.to_string(), wait);
            }
        }
        tokio::select! {
            _ = inner.stop.cancelled() => break,
            _ = tokio::time::sleep(wait) => {}
        }
        wait = (wait * 2).min(max);
    }
}
