//! A connector: its binds kept up (reconnecting with backoff), its `submit_sm` paced by
//! throughput and window, and the `deliver_sm` of its sessions turned into events.

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::time::Duration;

use rusmpp::pdus::SubmitSm;
use rusmpp::{CommandStatus, Pdu};
use tokio::sync::{Mutex, Semaphore, mpsc, watch};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::CarrierEvent;
use super::config::{BindMode, SmppConfig};
use super::session::{BindKind, Delivery, Session};
use super::submit::{self, is_transient};
use crate::{Accepted, BoxFuture, Carrier, OutboundSms, Rejected};

/// Most time an SMS may wait for its throughput slot before it is refused for now: past
/// this it waits in the database instead, well inside the worker's 30 s lease.
const MAX_BACKLOG: Duration = Duration::from_secs(15);

/// Tries of one part refused for now (throttled, queue full) before the SMS waits for the
/// worker's next round.
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
    /// When the next `submit_sm` may leave.
    next_slot: Mutex<Instant>,
    reference: AtomicU8,
    /// Parts of the submissions in progress (waiting for the window, a slot or an answer).
    queued: AtomicUsize,
    stop: CancellationToken,
}

/// Counts a submission's parts as queued while it lasts.
struct Queued<'a> {
    inner: &'a Inner,
    parts: usize,
}

impl<'a> Queued<'a> {
    fn join(inner: &'a Inner, parts: usize) -> Self {
        inner.queued.fetch_add(parts, Ordering::Relaxed);
        Self { inner, parts }
    }
}

impl Drop for Queued<'_> {
    fn drop(&mut self) {
        self.inner.queued.fetch_sub(self.parts, Ordering::Relaxed);
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
        let inner = Arc::new(Inner {
            window: Semaphore::new(config.window.max(1) as usize),
            transmitter: watch::channel(None).0,
            receiver: watch::channel(false).0,
            next_slot: Mutex::new(Instant::now()),
            reference: AtomicU8::new(0),
            queued: AtomicUsize::new(0),
            stop: CancellationToken::new(),
            config,
        });
        let (deliveries, deliveries_rx) = mpsc::channel(256);
        tokio::spawn(super::delivery::receive_loop(
            inner.config.name.clone(),
            deliveries_rx,
            events,
        ));
        let kinds: &[BindKind] = match inner.config.bind {
            BindMode::Transceiver => &[BindKind::Transceiver],
            BindMode::TransmitterReceiver => &[BindKind::Transmitter, BindKind::Receiver],
        };
        for &kind in kinds {
            tokio::spawn(keep_bound(inner.clone(), kind, deliveries.clone()));
        }
        Self { inner }
    }

    /// The connector's configuration.
    pub fn config(&self) -> &SmppConfig {
        &self.inner.config
    }

    /// Whether submits can leave now.
    pub fn is_bound(&self) -> bool {
        self.inner
            .transmitter
            .borrow()
            .as_ref()
            .is_some_and(|s| !s.is_closed())
    }

    /// Whether deliveries can arrive now.
    pub fn is_receiving(&self) -> bool {
        *self.inner.receiver.borrow()
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

    async fn submit_parts(&self, sms: &OutboundSms) -> Result<Accepted, Rejected> {
        let transient = |reason: String| Rejected {
            permanent: false,
            reason,
        };
        let session = self
            .inner
            .transmitter
            .borrow()
            .clone()
            .filter(|s| !s.is_closed())
            .ok_or_else(|| transient(format!("{}: bind down", self.inner.config.name)))?;
        let reference = self.inner.reference.fetch_add(1, Ordering::Relaxed);
        let pdus = submit::pdus(&self.inner.config, sms, reference).map_err(|reason| Rejected {
            permanent: true,
            reason,
        })?;
        let _queued = Queued::join(&self.inner, pdus.len());
        if self.backlog() > MAX_BACKLOG {
            return Err(transient(format!(
                "{}: throughput limit reached, later",
                self.inner.config.name
            )));
        }
        let mut ids = Vec::with_capacity(pdus.len());
        for pdu in pdus {
            ids.push(self.submit_one(&session, pdu).await?);
        }
        Ok(Accepted {
            message_ids: ids,
            network: self.inner.config.name.clone(),
        })
    }

    /// Submits one part, retrying a few times what the SMSC refuses for now.
    async fn submit_one(&self, session: &Session, pdu: SubmitSm) -> Result<String, Rejected> {
        let config = &self.inner.config;
        let mut wait = Duration::from_millis(100);
        for attempt in 1..=PART_TRIES {
            let resp = {
                let _permit = self.inner.window.acquire().await.map_err(|_| Rejected {
                    permanent: false,
                    reason: "connector stopped".into(),
                })?;
                self.pace().await;
                session
                    .request(Pdu::SubmitSm(pdu.clone()), config.response_timeout())
                    .await
            };
            let resp = resp.map_err(|e| Rejected {
                permanent: false,
                reason: format!("{}: {e}", config.name),
            })?;
            let status = resp.status();
            if status == CommandStatus::EsmeRok {
                return match resp.pdu() {
                    Some(Pdu::SubmitSmResp(r)) => Ok(r.message_id().as_str().to_owned()),
                    _ => Ok(String::new()),
                };
            }
            let code = u32::from(status);
            let reason = format!(
                "{}: submit_sm refused with {status:?} (0x{code:08x})",
                config.name
            );
            if !is_transient(status) {
                return Err(Rejected {
                    permanent: true,
                    reason,
                });
            }
            if attempt == PART_TRIES {
                return Err(Rejected {
                    permanent: false,
                    reason,
                });
            }
            tokio::time::sleep(wait).await;
            wait *= 2;
        }
        Err(Rejected {
            permanent: false,
            reason: "unreachable".into(),
        })
    }

    /// How long the parts waiting in this connector (this SMS's included) take to leave at
    /// the throughput limit.
    fn backlog(&self) -> Duration {
        let per_second = self.inner.config.throughput;
        if per_second == 0 {
            return Duration::ZERO;
        }
        let parts = self.inner.queued.load(Ordering::Relaxed) as u32;
        Duration::from_secs(1) * parts.saturating_sub(1) / per_second
    }

    /// Waits for the next slot the throughput limit allows.
    async fn pace(&self) {
        let per_second = self.inner.config.throughput;
        if per_second == 0 {
            return;
        }
        let step = Duration::from_secs(1) / per_second;
        let slot = {
            let mut next = self.inner.next_slot.lock().await;
            let now = Instant::now();
            let slot = (*next).max(now);
            *next = slot + step;
            slot
        };
        tokio::time::sleep_until(slot).await;
    }
}

impl Carrier for Smpp {
    fn name(&self) -> &str {
        &self.inner.config.name
    }

    fn submit<'a>(&'a self, sms: &'a OutboundSms) -> BoxFuture<'a, Result<Accepted, Rejected>> {
        Box::pin(self.submit_parts(sms))
    }
}

/// Binds, waits for the session to end, binds again, with a doubling wait after failures.
async fn keep_bound(inner: Arc<Inner>, kind: BindKind, deliveries: mpsc::Sender<Delivery>) {
    let config = &inner.config;
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
                tracing::warn!(connector = %config.name, ?kind, "smpp: session ended");
            }
            Err(e) => {
                tracing::warn!(connector = %config.name, ?kind, error = %e, "smpp: bind failed");
            }
        }
        tokio::select! {
            _ = inner.stop.cancelled() => break,
            _ = tokio::time::sleep(wait) => {}
        }
        wait = (wait * 2).min(max);
    }
}
