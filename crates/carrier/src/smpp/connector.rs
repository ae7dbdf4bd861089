//! A connector: its binds kept up (reconnecting with backoff), its `submit_sm` paced by
//! throughput and window, and the `deliver_sm` of its sessions turned into events.

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::time::Duration;

use rusmpp::pdus::{DeliverSm, SubmitSm};
use rusmpp::tlvs::{MessageSubmissionRequestTlvValue, TlvValue};
use rusmpp::types::{COctetString, EmptyOrFullCOctetString, OctetString};
use rusmpp::values::{
    DataCoding, EsmClass, Npi, PriorityFlag, RegisteredDelivery, ReplaceIfPresentFlag, ServiceType,
    Ton,
};
use rusmpp::{CommandStatus, Pdu};
use tokio::sync::{Mutex, Semaphore, mpsc, watch};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::config::{BindMode, Concatenation, SmppConfig};
use super::reassembly::Reassembly;
use super::session::{BindKind, Delivery, Session};
use super::{Ack, CarrierEvent, receipt, text};
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
        tokio::spawn(receive_loop(
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
        let pdus = self.pdus(sms).map_err(|reason| Rejected {
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

    /// The `submit_sm` of each part.
    fn pdus(&self, sms: &OutboundSms) -> Result<Vec<SubmitSm>, String> {
        let config = &self.inner.config;
        let (dest_ton, dest_npi, dest) = address(&sms.to);
        let (src_ton, src_npi, src) = address(&sms.from);
        let destination = COctetString::from_vec(format!("{dest}\0").into_bytes())
            .map_err(|e| format!("destination {dest:?}: {e:?}"))?;
        let source = COctetString::from_vec(format!("{src}\0").into_bytes())
            .map_err(|e| format!("sender {src:?}: {e:?}"))?;
        let mut coding = text::data_coding(sms.encoding);
        if sms.flash {
            // Message class 0 (flash) in the GSM data coding scheme.
            coding |= 0x10;
        }
        let total = sms.parts.len();
        if total > 255 {
            return Err(format!("{total} parts: at most 255 are possible"));
        }
        let reference = self.inner.reference.fetch_add(1, Ordering::Relaxed);
        let mut out = Vec::with_capacity(total);
        for (i, part) in sms.parts.iter().enumerate() {
            let mut body = text::encode(part, sms.encoding);
            let mut esm = EsmClass::from(0x00);
            let mut tlvs = Vec::new();
            if total > 1 {
                let seq = (i + 1) as u8;
                match config.concatenation {
                    Concatenation::Udh => {
                        let mut with_header =
                            text::concatenation_udh(reference, total as u8, seq).to_vec();
                        with_header.append(&mut body);
                        body = with_header;
                        esm = EsmClass::from(0x40);
                    }
                    Concatenation::Sar => {
                        tlvs.push(MessageSubmissionRequestTlvValue::SarMsgRefNum(u16::from(
                            reference,
                        )));
                        tlvs.push(MessageSubmissionRequestTlvValue::SarTotalSegments(
                            total as u8,
                        ));
                        tlvs.push(MessageSubmissionRequestTlvValue::SarSegmentSeqnum(seq));
                    }
                }
            }
            let short_message = OctetString::from_vec(body)
                .map_err(|e| format!("part {} too long: {e:?}", i + 1))?;
            out.push(SubmitSm::new(
                ServiceType::default(),
                src_ton,
                src_npi,
                source.clone(),
                dest_ton,
                dest_npi,
                destination.clone(),
                esm,
                0,
                PriorityFlag::from(0x00),
                EmptyOrFullCOctetString::empty(),
                EmptyOrFullCOctetString::empty(),
                // A receipt on the final outcome, success or failure.
                RegisteredDelivery::from(0x01),
                ReplaceIfPresentFlag::from(0x00),
                DataCoding::from(coding),
                0,
                short_message,
                tlvs,
            ));
        }
        Ok(out)
    }
}

/// Statuses that say "later", not "never".
fn is_transient(status: CommandStatus) -> bool {
    matches!(
        status,
        CommandStatus::EsmeRthrottled
            | CommandStatus::EsmeRmsgqful
            | CommandStatus::EsmeRsyserr
            | CommandStatus::EsmeRxTAppn
    )
}

/// TON, NPI and digits of an address: `+` and digits are international E.164, other digits
/// national, anything else alphanumeric.
fn address(addr: &str) -> (Ton, Npi, String) {
    if let Some(digits) = addr.strip_prefix('+')
        && !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit())
    {
        return (Ton::International, Npi::Isdn, digits.to_owned());
    }
    if !addr.is_empty() && addr.bytes().all(|b| b.is_ascii_digit()) {
        return (Ton::Unknown, Npi::Isdn, addr.to_owned());
    }
    (Ton::Alphanumeric, Npi::Unknown, addr.to_owned())
}

/// The platform's form of an address the SMSC gave: `+` before an international number.
fn platform_address(addr: &str, ton: Ton) -> String {
    let international = ton == Ton::International
        || (ton == Ton::Unknown && addr.len() > 8 && addr.bytes().all(|b| b.is_ascii_digit()));
    if international && !addr.starts_with('+') {
        format!("+{addr}")
    } else {
        addr.to_owned()
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

/// Turns deliveries into events: receipts as they come, SMS once all their parts are in.
async fn receive_loop(
    connector: String,
    mut deliveries: mpsc::Receiver<Delivery>,
    events: mpsc::Sender<CarrierEvent>,
) {
    let mut parts = Reassembly::default();
    while let Some(Delivery { pdu, answer }) = deliveries.recv().await {
        let event = match read_delivery(&pdu) {
            Read::Receipt(receipt) => CarrierEvent::Receipt {
                connector: connector.clone(),
                receipt,
                ack: Ack(vec![answer]),
            },
            Read::Sms {
                from,
                to,
                text,
                part: None,
            } => CarrierEvent::Inbound {
                connector: connector.clone(),
                from,
                to,
                text,
                ack: Ack(vec![answer]),
            },
            Read::Sms {
                from,
                to,
                text,
                part: Some(p),
            } => match parts.add(&from, &to, p, text, answer) {
                Some((text, answers)) => CarrierEvent::Inbound {
                    connector: connector.clone(),
                    from,
                    to,
                    text,
                    ack: Ack(answers),
                },
                None => continue,
            },
        };
        if let Err(mpsc::error::SendError(event)) = events.send(event).await {
            let ack = match event {
                CarrierEvent::Receipt { ack, .. } | CarrierEvent::Inbound { ack, .. } => ack,
            };
            ack.retry_later();
        }
    }
}

enum Read {
    Receipt(receipt::Receipt),
    Sms {
        from: String,
        to: String,
        text: String,
        part: Option<text::PartOf>,
    },
}

fn read_delivery(pdu: &DeliverSm) -> Read {
    let esm = u8::from(pdu.esm_class);
    let coding = u8::from(pdu.data_coding);
    let raw: &[u8] = pdu.short_message().as_ref();
    let (mut tlv_id, mut tlv_state, mut sar) = (None, None, (None, None, None));
    let mut payload: Option<Vec<u8>> = None;
    for tlv in pdu.tlvs() {
        match tlv.value() {
            Some(TlvValue::ReceiptedMessageId(id)) => tlv_id = Some(id.as_str().to_owned()),
            Some(TlvValue::MessageState(s)) => tlv_state = Some(u8::from(*s)),
            Some(TlvValue::SarMsgRefNum(r)) => sar.0 = Some(*r),
            Some(TlvValue::SarTotalSegments(t)) => sar.1 = Some(*t),
            Some(TlvValue::SarSegmentSeqnum(s)) => sar.2 = Some(*s),
            Some(TlvValue::MessagePayload(p)) => payload = Some(p.value.as_ref().to_vec()),
            _ => {}
        }
    }
    let raw = payload.as_deref().unwrap_or(raw);
    // Message type bits: 0x04 SMSC delivery receipt, 0x08 SME acknowledgement, 0x20
    // intermediate notification.
    let is_receipt = esm & 0x3C != 0 || tlv_id.is_some();
    if is_receipt {
        let text = text::decode(raw, if coding == 0x08 { 0x08 } else { 0x01 });
        if let Some(r) = receipt::parse(&text, tlv_id.as_deref(), tlv_state) {
            return Read::Receipt(r);
        }
    }
    let (part, body) = if esm & 0x40 != 0 {
        text::split_udh(raw)
    } else {
        (None, raw)
    };
    let part = part.or(match sar {
        (Some(reference), Some(total), Some(seq)) => Some(text::PartOf {
            reference,
            total,
            seq,
        }),
        _ => None,
    });
    Read::Sms {
        from: platform_address(pdu.source_addr.as_str(), pdu.source_addr_ton),
        to: platform_address(pdu.destination_addr.as_str(), pdu.dest_addr_ton),
        text: text::decode(body, coding),
        part,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dialtone_domain::sms::Encoding;

    #[test]
    fn addresses() {
        assert_eq!(
            address("+33612345678"),
            (Ton::International, Npi::Isdn, "33612345678".into())
        );
        assert_eq!(address("Dialtone").0, Ton::Alphanumeric);
        assert_eq!(address("36000").0, Ton::Unknown);
        assert_eq!(
            platform_address("33612345678", Ton::International),
            "+33612345678"
        );
        assert_eq!(platform_address("36000", Ton::Unknown), "36000");
    }

    #[tokio::test]
    async fn parts_carry_udh_or_sar() {
        let (tx, _rx) = mpsc::channel(1);
        let mut config = SmppConfig::new("t", "127.0.0.1", 9, "id", "pw");
        config.reconnect_min_ms = 60_000;
        let smpp = Smpp::start(config.clone(), tx.clone());
        let sms = OutboundSms {
            sid: "s".into(),
            from: "+447700900000".into(),
            to: "+33612345678".into(),
            parts: vec!["a".repeat(153), "b".into()],
            encoding: Encoding::Gsm,
            flash: false,
        };
        let pdus = smpp.pdus(&sms).unwrap();
        assert_eq!(pdus.len(), 2);
        assert_eq!(u8::from(pdus[0].esm_class), 0x40);
        assert_eq!(&pdus[1].short_message().as_ref()[..6], &[5, 0, 3, 0, 2, 2]);
        assert_eq!(u8::from(pdus[0].registered_delivery), 1);
        smpp.stop().await;
        config.concatenation = Concatenation::Sar;
        let sar = Smpp::start(config, tx);
        let pdus = sar.pdus(&sms).unwrap();
        assert_eq!(u8::from(pdus[0].esm_class), 0);
        assert_eq!(pdus[0].tlvs().len(), 3);
        assert_eq!(pdus[1].short_message().as_ref(), b"b");
        sar.stop().await;
    }
}
