//! One SMPP session over TCP (or TLS): the bind, a writer task and a reader task, requests
//! matched to their responses by sequence number, `enquire_link` keepalive, and the
//! `deliver_sm` the SMSC sends handed on with what is needed to answer them.
//!
//! A session that breaks (read error, `unbind`, a keepalive left unanswered) cancels its
//! token and keeps the reason; every request still waiting then fails, and the connector
//! binds again. What was queued for the SMSC before the end (the `unbind_resp` answering
//! the SMSC's `unbind`, above all) is still written before the connection closes.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use rusmpp::pdus::{BindReceiver, BindTransceiver, BindTransmitter, DeliverSm};
use rusmpp::tokio_codec::CommandCodec;
use rusmpp::types::COctetString;
use rusmpp::values::{InterfaceVersion, Npi, Ton};
use rusmpp::{Command, CommandId, CommandStatus, Pdu};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;
use tokio_util::codec::Framed;
use tokio_util::sync::CancellationToken;

use super::config::SmppConfig;

/// How long a closing session may take to write what was queued before the end.
const DRAIN: Duration = Duration::from_secs(1);

/// Which bind a session makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BindKind {
    Transceiver,
    Transmitter,
    Receiver,
}

impl BindKind {
    /// The word the operator sees.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Transceiver => "transceiver",
            Self::Transmitter => "transmitter",
            Self::Receiver => "receiver",
        }
    }
}

/// Why a session or one of its requests failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SessionError {
    /// The TCP or TLS connection could not be made.
    #[error("cannot connect: {0}")]
    Connect(String),
    /// The SMSC refused the bind.
    #[error("bind refused with status 0x{0:08x}")]
    BindRefused(u32),
    /// No response within the response timeout.
    #[error("no response from the SMSC in time")]
    Timeout,
    /// The session ended before the response came.
    #[error("the session is closed")]
    Closed,
}

/// A `deliver_sm` from the SMSC and the way to answer it.
#[derive(Debug)]
pub(crate) struct Delivery {
    pub pdu: DeliverSm,
    pub answer: Answer,
}

/// Sends the `deliver_sm_resp` of one `deliver_sm`, once its content is safe.
#[derive(Debug)]
pub(crate) struct Answer {
    out: mpsc::Sender<Command>,
    seq: u32,
}

impl Answer {
    /// Answers with `status` (a temporary error makes the SMSC deliver it again later).
    pub(super) fn send(self, status: CommandStatus) {
        let resp = Command::new(status, self.seq, Pdu::DeliverSmResp(Default::default()));
        // A full or closed queue means the session is gone: the SMSC will deliver again.
        let _ = self.out.try_send(resp);
    }
}

type Pending = Arc<Mutex<HashMap<u32, oneshot::Sender<Command>>>>;

/// A bound session, cheap to share.
#[derive(Debug)]
pub(crate) struct Session {
    out: mpsc::Sender<Command>,
    pending: Pending,
    seq: AtomicU32,
    closed: CancellationToken,
    /// Why it ended, once it has (the first reason wins).
    reason: Mutex<Option<String>>,
}

trait Io: AsyncRead + AsyncWrite + Send + Unpin {}
impl<T: AsyncRead + AsyncWrite + Send + Unpin> Io for T {}

async fn connect_io(config: &SmppConfig) -> Result<Box<dyn Io>, SessionError> {
    let addr = (config.host.as_str(), config.port);
    let tcp = tokio::time::timeout(config.response_timeout(), TcpStream::connect(addr))
        .await
        .map_err(|_| SessionError::Connect("timed out".into()))?
        .map_err(|e| SessionError::Connect(e.to_string()))?;
    let _ = tcp.set_nodelay(true);
    if !config.tls {
        return Ok(Box::new(tcp));
    }
    use tokio_rustls::rustls;
    let mut roots =
        rustls::RootCertStore::from_iter(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    if let Some(path) = config.tls_ca_file.clone() {
        use rustls::pki_types::CertificateDer;
        use rustls::pki_types::pem::PemObject;
        let pem = tokio::task::spawn_blocking(move || std::fs::read(path))
            .await
            .map_err(|e| SessionError::Connect(e.to_string()))?
            .map_err(|e| SessionError::Connect(format!("tls_ca_file: {e}")))?;
        for cert in CertificateDer::pem_slice_iter(&pem) {
            let cert = cert.map_err(|e| SessionError::Connect(format!("tls_ca_file: {e}")))?;
            roots
                .add(cert)
                .map_err(|e| SessionError::Connect(format!("tls_ca_file: {e}")))?;
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| SessionError::Connect(e.to_string()))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    let name = rustls::pki_types::ServerName::try_from(config.host.clone())
        .map_err(|e| SessionError::Connect(e.to_string()))?;
    let stream = tokio_rustls::TlsConnector::from(Arc::new(tls))
        .connect(name, tcp)
        .await
        .map_err(|e| SessionError::Connect(format!("TLS: {e}")))?;
    Ok(Box::new(stream))
}

fn c_string<const MIN: usize, const MAX: usize>(text: &str) -> COctetString<MIN, MAX> {
    COctetString::from_vec(format!("{text}\0").into_bytes())
        .unwrap_or_else(|_| COctetString::empty())
}

fn bind_pdu(config: &SmppConfig, kind: BindKind) -> Pdu {
    let (id, pw, ty) = (
        c_string(&config.system_id),
        c_string(&config.password),
        c_string(&config.system_type),
    );
    let (v, ton, npi, range) = (
        InterfaceVersion::Smpp3_4,
        Ton::Unknown,
        Npi::Unknown,
        COctetString::empty(),
    );
    match kind {
        BindKind::Transceiver => {
            Pdu::BindTransceiver(BindTransceiver::new(id, pw, ty, v, ton, npi, range))
        }
        BindKind::Transmitter => {
            Pdu::BindTransmitter(BindTransmitter::new(id, pw, ty, v, ton, npi, range))
        }
        BindKind::Receiver => Pdu::BindReceiver(BindReceiver::new(id, pw, ty, v, ton, npi, range)),
    }
}

impl Session {
    /// Connects, binds, and starts the session's tasks. `deliveries` receives every
    /// `deliver_sm` (a transmitter never gets any).
    pub(super) async fn open(
        config: &SmppConfig,
        kind: BindKind,
        deliveries: mpsc::Sender<Delivery>,
    ) -> Result<Arc<Self>, SessionError> {
        let io = connect_io(config).await?;
        let mut framed = Framed::new(io, CommandCodec::new());
        let bind = Command::new(CommandStatus::EsmeRok, 1, bind_pdu(config, kind));
        framed
            .send(bind)
            .await
            .map_err(|e| SessionError::Connect(e.to_string()))?;
        let resp = tokio::time::timeout(config.response_timeout(), async {
            while let Some(frame) = framed.next().await {
                match frame {
                    Ok(cmd) if cmd.sequence_number() == 1 && cmd.id().is_response() => {
                        return Ok(cmd);
                    }
                    Ok(_) => continue,
                    Err(e) => return Err(SessionError::Connect(e.to_string())),
                }
            }
            Err(SessionError::Closed)
        })
        .await
        .map_err(|_| SessionError::Timeout)??;
        if resp.status() != CommandStatus::EsmeRok {
            return Err(SessionError::BindRefused(u32::from(resp.status())));
        }
        let (sink, stream) = framed.split();
        let (out, out_rx) = mpsc::channel(1024);
        let session = Arc::new(Session {
            out,
            pending: Arc::default(),
            seq: AtomicU32::new(2),
            closed: CancellationToken::new(),
            reason: Mutex::new(None),
        });
        tokio::spawn(write_loop(sink, out_rx, session.clone()));
        tokio::spawn(read_loop(
            stream,
            session.clone(),
            deliveries,
            Duration::from_secs(config.enquire_link_secs),
        ));
        Ok(session)
    }

    fn next_seq(&self) -> u32 {
        // Sequence numbers run 1..=0x7FFFFFFF and wrap.
        let n = self.seq.fetch_add(1, Ordering::Relaxed) & 0x7FFF_FFFF;
        n.max(1)
    }

    /// Sends a request and waits for its response until `deadline` (queueing included).
    pub(super) async fn request(
        &self,
        pdu: Pdu,
        deadline: Instant,
    ) -> Result<Command, SessionError> {
        if self.closed.is_cancelled() {
            return Err(SessionError::Closed);
        }
        let seq = self.next_seq();
        let (tx, rx) = oneshot::channel();
        self.lock().insert(seq, tx);
        let cmd = Command::new(CommandStatus::EsmeRok, seq, pdu);
        let failed = match tokio::time::timeout_at(deadline, self.out.send(cmd)).await {
            Ok(Ok(())) => None,
            Ok(Err(_)) => Some(SessionError::Closed),
            Err(_) => Some(SessionError::Timeout),
        };
        if let Some(e) = failed {
            self.lock().remove(&seq);
            return Err(e);
        }
        match tokio::time::timeout_at(deadline, rx).await {
            Ok(Ok(resp)) => Ok(resp),
            Ok(Err(_)) => Err(SessionError::Closed),
            Err(_) => {
                self.lock().remove(&seq);
                Err(SessionError::Timeout)
            }
        }
    }

    /// Ends the session for `reason` (kept if it is the first).
    fn end(&self, reason: impl Into<String>) {
        let mut kept = self.reason.lock().unwrap_or_else(|p| p.into_inner());
        if kept.is_none() {
            *kept = Some(reason.into());
        }
        drop(kept);
        self.closed.cancel();
    }

    /// Why the session ended (None while it runs).
    pub(super) fn close_reason(&self) -> Option<String> {
        self.reason
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u32, oneshot::Sender<Command>>> {
        self.pending.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Resolves when the session has ended.
    pub(super) async fn closed(&self) {
        self.closed.cancelled().await;
    }

    /// Whether the session has ended.
    pub(super) fn is_closed(&self) -> bool {
        self.closed.is_cancelled()
    }

    /// Ends the session (sends `unbind` first, without waiting long for its answer).
    pub(super) async fn close(&self) {
        if !self.is_closed() {
            let deadline = Instant::now() + Duration::from_millis(500);
            let _ = self.request(Pdu::Unbind, deadline).await;
        }
        self.end("unbound by dialtone");
    }
}

async fn write_loop<S>(mut sink: S, mut rx: mpsc::Receiver<Command>, session: Arc<Session>)
where
    S: futures_util::Sink<Command> + Unpin,
{
    loop {
        let first = tokio::select! {
            _ = session.closed.cancelled() => break,
            cmd = rx.recv() => match cmd { Some(c) => c, None => break },
        };
        // Write what is queued, then flush once: many submits share one system call.
        let mut ok = sink.feed(first).await.is_ok();
        while ok && let Ok(more) = rx.try_recv() {
            ok = sink.feed(more).await.is_ok();
        }
        if !ok || sink.flush().await.is_err() {
            session.end("cannot write to the SMSC");
            return;
        }
    }
    // The end: what was queued before it (an `unbind_resp`) still goes out, briefly.
    let drain = async {
        while let Ok(cmd) = rx.try_recv() {
            if sink.feed(cmd).await.is_err() {
                return;
            }
        }
        let _ = sink.flush().await;
    };
    let _ = tokio::time::timeout(DRAIN, drain).await;
    session.end("closed");
}

async fn read_loop<S, E>(
    mut stream: S,
    session: Arc<Session>,
    deliveries: mpsc::Sender<Delivery>,
    keepalive: Duration,
) where
    S: futures_util::Stream<Item = Result<Command, E>> + Unpin,
    E: std::fmt::Display,
{
    let mut ticker = tokio::time::interval_at(tokio::time::Instant::now() + keepalive, keepalive);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut awaiting_link = false;
    loop {
        tokio::select! {
            _ = session.closed.cancelled() => break,
            frame = stream.next() => {
                let cmd = match frame {
                    Some(Ok(cmd)) => cmd,
                    Some(Err(e)) => {
                        tracing::warn!(error = %e, "smpp: unreadable frame, closing the session");
                        session.end(format!("unreadable frame from the SMSC: {e}"));
                        break;
                    }
                    None => {
                        session.end("the SMSC closed the connection");
                        break;
                    }
                };
                awaiting_link = false;
                if !handle(cmd, &session, &deliveries).await {
                    break;
                }
            }
            _ = ticker.tick() => {
                if awaiting_link {
                    tracing::warn!("smpp: enquire_link unanswered, closing the session");
                    session.end("enquire_link unanswered: the SMSC went silent");
                    break;
                }
                awaiting_link = true;
                let seq = session.next_seq();
                let _ = session.out.try_send(Command::new(CommandStatus::EsmeRok, seq, Pdu::EnquireLink));
            }
        }
    }
    session.end("closed");
    // Waiting requests fail now rather than at their timeout.
    session.lock().clear();
}

/// Handles one frame; false when the session must end.
async fn handle(cmd: Command, session: &Session, deliveries: &mpsc::Sender<Delivery>) -> bool {
    let seq = cmd.sequence_number();
    let id = cmd.id();
    if id.is_response() {
        if let Some(waiter) = session.lock().remove(&seq) {
            let _ = waiter.send(cmd);
        }
        return true;
    }
    let reply = |pdu: Pdu, status: CommandStatus| {
        let _ = session.out.try_send(Command::new(status, seq, pdu));
    };
    match (id, cmd.pdu()) {
        (CommandId::EnquireLink, _) => reply(Pdu::EnquireLinkResp, CommandStatus::EsmeRok),
        (CommandId::Unbind, _) => {
            // Queued before the session ends, so the writer sends it before it closes.
            let resp = Command::new(CommandStatus::EsmeRok, seq, Pdu::UnbindResp);
            let _ = session.out.send(resp).await;
            session.end("unbound by the SMSC");
            return false;
        }
        (CommandId::DeliverSm, Some(Pdu::DeliverSm(pdu))) => {
            let answer = Answer {
                out: session.out.clone(),
                seq,
            };
            let delivery = Delivery {
                pdu: pdu.clone(),
                answer,
            };
            if let Err(mpsc::error::SendError(d)) = deliveries.send(delivery).await {
                d.answer.send(CommandStatus::EsmeRxTAppn);
            }
        }
        _ => reply(Pdu::GenericNack, CommandStatus::EsmeRinvcmdid),
    }
    true
}
