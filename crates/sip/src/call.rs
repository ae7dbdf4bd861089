//! One call leg on a trunk: its dialog, its media (bound while it rings, running once
//! answered or in early media), and what it reports to the platform, in order.
//!
//! Reports go through one queue per call, read by one task that hands each to the
//! platform in turn (digits before a hangup, a recording before the hangup that ends it).
//! The platform stores a report and returns, so the queue never waits on a scenario; a
//! hangup the platform asked for flushes the queue before it is answered.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use dialtone_carrier::voice::{CallEvent, PlayTag};
use dialtone_domain::call::HangupSource;
use rsipstack::dialog::dialog::TransactionHandle;
use rsipstack::dialog::invite_dialog::InviteDialog;
use rsipstack::sip::Header;
use tokio::net::UdpSocket;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::media::g711::Codec;
use crate::media::{Closed, Leg, LegConfig, MediaCommand, MediaEvent, MediaStats};
use crate::platform::Platform;
use crate::trunk::Slot;
use crate::{cause, sdp};

/// Which way a leg goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Direction {
    /// A call that came in through the trunk.
    Inbound,
    /// A call dialled out through the trunk.
    Outbound,
}

/// What goes through a call's report queue.
enum Report {
    Event(CallEvent),
    /// Answered once everything queued before it was reported.
    Flush(oneshot::Sender<()>),
}

/// A call's media before and after it starts.
enum Media {
    /// Negotiated and bound, not started (the call rings).
    Ready(UdpSocket, LegConfig),
    /// Running.
    Running(Leg, JoinHandle<Closed>),
    /// Over.
    Ended,
}

/// A call leg carried by the node.
pub(crate) struct SipCall {
    /// The platform's call id.
    pub(crate) callid: String,
    /// The SIP Call-ID of its dialog.
    pub(crate) sip_call_id: String,
    _slot: Slot,
    pub(crate) dialog: InviteDialog,
    pub(crate) direction: Direction,
    /// Our SDP (the answer to an inbound offer; the offer of an outbound call).
    local_sdp: String,
    /// Where we receive, for answers to the far end's new offers.
    local: sdp::Local,
    /// The trunk's codecs.
    codecs: Vec<Codec>,
    media: tokio::sync::Mutex<Media>,
    answered: AtomicBool,
    early: AtomicBool,
    ended: AtomicBool,
    /// The Q.850 cause of the far end's BYE, when it gave one.
    pub(crate) remote_cause: Mutex<Option<i64>>,
    /// Cancelled when the call ends (dials from it stop ringing).
    pub(crate) over: CancellationToken,
    reports: mpsc::UnboundedSender<Report>,
    stats: Arc<MediaStats>,
}

/// What a call is made of.
pub(crate) struct Parts {
    pub(crate) callid: String,
    pub(crate) sip_call_id: String,
    pub(crate) slot: Slot,
    pub(crate) dialog: InviteDialog,
    pub(crate) direction: Direction,
    pub(crate) local_sdp: String,
    pub(crate) local: sdp::Local,
    pub(crate) codecs: Vec<Codec>,
    pub(crate) socket: UdpSocket,
    pub(crate) leg: LegConfig,
    pub(crate) answered: bool,
}

impl SipCall {
    /// A call whose reports go to `platform`.
    pub(crate) fn new(
        parts: Parts,
        platform: Arc<dyn Platform>,
        stats: Arc<MediaStats>,
    ) -> Arc<Self> {
        let (tx, mut rx) = mpsc::unbounded_channel::<Report>();
        let callid = parts.callid.clone();
        tokio::spawn(async move {
            while let Some(report) = rx.recv().await {
                match report {
                    Report::Event(event) => platform.report(&callid, event).await,
                    Report::Flush(done) => {
                        let _ = done.send(());
                    }
                }
            }
        });
        Arc::new(Self {
            callid: parts.callid,
            sip_call_id: parts.sip_call_id,
            _slot: parts.slot,
            dialog: parts.dialog,
            direction: parts.direction,
            local_sdp: parts.local_sdp,
            local: parts.local,
            codecs: parts.codecs,
            media: tokio::sync::Mutex::new(Media::Ready(parts.socket, parts.leg)),
            answered: AtomicBool::new(parts.answered),
            early: AtomicBool::new(false),
            ended: AtomicBool::new(false),
            remote_cause: Mutex::new(None),
            over: CancellationToken::new(),
            reports: tx,
            stats,
        })
    }

    /// Queues a report to the platform.
    pub(crate) fn report(&self, event: CallEvent) {
        let _ = self.reports.send(Report::Event(event));
    }

    /// Waits until every report queued so far was handed to the platform.
    async fn flush(&self) {
        let (tx, rx) = oneshot::channel();
        if self.reports.send(Report::Flush(tx)).is_ok() {
            let _ = rx.await;
        }
    }

    /// Whether the call ended.
    pub(crate) fn is_over(&self) -> bool {
        self.ended.load(Ordering::Acquire)
    }

    fn sdp_headers() -> Vec<Header> {
        vec![Header::ContentType("application/sdp".into())]
    }

    /// The running leg, starting the media if it was only bound.
    pub(crate) async fn leg(self: &Arc<Self>) -> Option<Leg> {
        let mut media = self.media.lock().await;
        match &*media {
            Media::Running(leg, _) => return Some(leg.clone()),
            Media::Ended => return None,
            Media::Ready(..) => {}
        }
        let Media::Ready(socket, config) = std::mem::replace(&mut *media, Media::Ended) else {
            return None;
        };
        let weak = Arc::downgrade(self);
        let events = Box::new(move |event: MediaEvent| {
            let Some(call) = weak.upgrade() else { return };
            match event {
                MediaEvent::Digit(key) => call.report(CallEvent::Digits(key.to_string())),
                MediaEvent::Played(tag) => call.report(CallEvent::Played(tag)),
                MediaEvent::Recorded(samples) => {
                    call.report(CallEvent::Audio(dialtone_media::pcm_wav(&samples)));
                }
                // Off the leg's task: ending the call waits for that task to end.
                MediaEvent::Silent => {
                    tokio::spawn(async move { call.end_by_network(cause::TIMER_EXPIRY).await });
                }
            }
        });
        match Leg::spawn(socket, config, events, self.stats.clone()) {
            Ok((leg, task)) => {
                *media = Media::Running(leg.clone(), task);
                Some(leg)
            }
            Err(e) => {
                tracing::warn!(callid = %self.callid, error = %e, "sip: media could not start");
                None
            }
        }
    }

    /// Answers a call that came in (200 OK with our SDP) and starts its media.
    pub(crate) async fn answer(self: &Arc<Self>) -> Result<(), String> {
        if self.direction == Direction::Outbound || self.answered.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        self.dialog
            .accept(
                Some(Self::sdp_headers()),
                Some(self.local_sdp.clone().into_bytes()),
            )
            .map_err(|e| format!("answer: {e}"))?;
        self.leg().await;
        Ok(())
    }

    /// 180 Ringing on a call that came in and is not answered.
    pub(crate) fn ringing(&self) -> Result<(), String> {
        if self.direction == Direction::Outbound || self.answered.load(Ordering::Acquire) {
            return Ok(());
        }
        self.dialog
            .ringing(None, None)
            .map_err(|e| format!("ringing: {e}"))
    }

    /// The leg, for a prompt or a recording: a call that came in and is not answered gets
    /// early media (183 with our SDP) so that the caller hears it.
    pub(crate) async fn media_leg(self: &Arc<Self>) -> Result<Leg, String> {
        if self.direction == Direction::Inbound
            && !self.answered.load(Ordering::Acquire)
            && !self.early.swap(true, Ordering::AcqRel)
        {
            self.dialog
                .ringing(
                    Some(Self::sdp_headers()),
                    Some(self.local_sdp.clone().into_bytes()),
                )
                .map_err(|e| format!("early media: {e}"))?;
        }
        self.leg()
            .await
            .ok_or_else(|| "the call's media is over".to_owned())
    }

    /// A prompt could not be played: its waiter is told at once.
    pub(crate) fn unplayed(&self, tag: Option<PlayTag>) {
        if let Some(tag) = tag {
            self.report(CallEvent::Played(tag));
        }
    }

    /// Stops the media and queues what it recorded (voicemail first, then the call).
    async fn close_media(&self) {
        let previous = std::mem::replace(&mut *self.media.lock().await, Media::Ended);
        if let Media::Running(leg, task) = previous {
            leg.send(MediaCommand::Close).await;
            if let Ok(closed) = task.await {
                if let Some(v) = closed.voicemail {
                    self.report(CallEvent::Audio(dialtone_media::pcm_wav(&v)));
                }
                if let Some(r) = closed.recording {
                    self.report(CallEvent::CallRecorded(dialtone_media::pcm_wav(&r)));
                }
            }
        }
    }

    /// Ends the call because the platform asked (a scenario's hangup, the API): its
    /// recordings are reported before this returns, then the far end is told (BYE, or a
    /// refusal while it rings). False when it had already ended.
    pub(crate) async fn hang_up(&self, q850: i64) -> bool {
        if self.ended.swap(true, Ordering::AcqRel) {
            return false;
        }
        self.over.cancel();
        self.close_media().await;
        self.flush().await;
        let reason = cause::reason_header(q850, "");
        let result = match self.direction {
            Direction::Inbound if !self.answered.load(Ordering::Acquire) => {
                let status = cause::status_of_cause(q850);
                self.dialog
                    .reject(Some(status.into()), Some(reason))
                    .map_err(|e| e.to_string())
            }
            _ => self
                .dialog
                .bye_with_headers(Some(vec![Header::Reason(reason.into())]))
                .await
                .map_err(|e| e.to_string()),
        };
        if let Err(e) = result {
            tracing::debug!(callid = %self.callid, error = %e, "sip: hangup not sent");
        }
        true
    }

    /// The network ends the call (its far end went silent): BYE, then the hangup reported
    /// with `q850` and the system as its source.
    pub(crate) async fn end_by_network(&self, q850: i64) {
        if self.hang_up(q850).await {
            self.report(CallEvent::Hangup {
                cause: q850,
                source: HangupSource::System,
            });
        }
    }

    /// The far end offers a new stream (re-INVITE, UPDATE): our answer on the same port,
    /// the media following it; 488 when nothing in it can be used. An offer-less re-INVITE
    /// is answered with our current SDP.
    pub(crate) async fn renegotiate(&self, offer: &[u8], handle: TransactionHandle) {
        use rsipstack::sip::StatusCode;
        let reply = if offer.is_empty() {
            Some(self.local_sdp.clone())
        } else {
            match sdp::answer_offer(offer, &self.codecs) {
                Ok((negotiated, pt)) => {
                    let mut media = self.media.lock().await;
                    match &mut *media {
                        Media::Running(leg, _) => {
                            leg.send(MediaCommand::Renegotiated(negotiated, pt)).await;
                        }
                        Media::Ready(_, config) => {
                            config.negotiated = negotiated;
                            config.codec_pt = pt;
                        }
                        Media::Ended => {}
                    }
                    Some(sdp::answer(&self.local, &negotiated, pt))
                }
                Err(_) => None,
            }
        };
        let sent = match reply {
            Some(answer) => {
                handle
                    .respond(
                        StatusCode::OK,
                        Some(Self::sdp_headers()),
                        Some(answer.into_bytes()),
                    )
                    .await
            }
            None => handle.reply(StatusCode::NotAcceptableHere).await,
        };
        if sent.is_err() {
            tracing::debug!(callid = %self.callid, "sip: the answer to a new offer was not sent");
        }
    }

    /// The far end ended the call (BYE, CANCEL, no ACK): recordings then the hangup are
    /// reported. False when it had already ended.
    pub(crate) async fn ended_by_far_end(&self, q850: i64, source: HangupSource) -> bool {
        if self.ended.swap(true, Ordering::AcqRel) {
            return false;
        }
        self.over.cancel();
        self.close_media().await;
        self.report(CallEvent::Hangup {
            cause: q850,
            source,
        });
        true
    }
}
