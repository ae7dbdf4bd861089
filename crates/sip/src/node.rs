//! The SIP side of a node: one SIP endpoint shared by every trunk, the node's RTP ports,
//! the calls it carries by call id (each followed until its dialog ends), the trunks, and
//! what a scenario does on a call it carries ([`SipNode::act`]). Starting it is
//! `startup.rs`; the trunks as the platform's voice networks, `network.rs`.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex, RwLock};

use dialtone_carrier::voice::CallAction;
use dialtone_domain::call::HangupSource;
use rsipstack::dialog::dialog::{DialogState, DialogStateReceiver, TerminatedReason};
use rsipstack::dialog::dialog_layer::DialogLayer;
use rsipstack::transaction::endpoint::EndpointInnerRef;
use tokio_util::sync::CancellationToken;

use crate::call::{Direction, SipCall};
use crate::cause;
use crate::config::{DtmfMode, NodeConfig, TrunkConfig};
use crate::media::{LegConfig, MediaCommand, MediaCounters, MediaStats, Pcm, PortPool};
use crate::platform::Platform;
use crate::sdp::Negotiated;
use crate::trunk::{Trunk, TrunkHealth};

/// The SIP side of a node.
pub struct SipNode {
    pub(crate) config: NodeConfig,
    pub(crate) endpoint: EndpointInnerRef,
    pub(crate) dialogs: Arc<DialogLayer>,
    pub(crate) ports: PortPool,
    pub(crate) stats: Arc<MediaStats>,
    pub(crate) platform: Arc<dyn Platform>,
    pub(crate) trunks: RwLock<Vec<(Arc<Trunk>, CancellationToken)>>,
    pub(crate) calls: Mutex<HashMap<String, Arc<SipCall>>>,
    /// Platform call ids by SIP Call-ID.
    pub(crate) by_sip_call_id: Mutex<HashMap<String, String>>,
    pub(crate) auth: crate::auth::AuthGuard,
    pub(crate) local: SocketAddr,
    pub(crate) beep: Pcm,
    /// How long `say` took to its first audio.
    pub(crate) first_audio: crate::prompt::FirstAudio,
    pub(crate) cancel: CancellationToken,
}

/// What the operator sees of a trunk: its configuration and health.
#[derive(Debug, Clone, serde::Serialize)]
pub struct TrunkStatus {
    /// Its configuration (the password left out).
    pub config: TrunkConfig,
    /// Its health.
    pub health: TrunkHealth,
}

/// Why the node could not start.
#[derive(Debug, thiserror::Error)]
#[error("sip: {0}")]
pub struct StartError(pub(crate) String);

impl SipNode {
    /// Where SIP is received.
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// The media counters of every leg so far.
    pub fn media(&self) -> MediaCounters {
        self.stats.read()
    }

    /// How long prompts spoken on calls took from the action to their first audio.
    pub fn first_audio(&self) -> crate::prompt::FirstAudioView {
        self.first_audio.summary()
    }

    /// Calls carried now.
    pub fn calls(&self) -> usize {
        self.calls_map().len()
    }

    /// Stops the node: every call is hung up, the listeners close.
    pub async fn stop(&self) {
        let calls: Vec<Arc<SipCall>> = self.calls_map().values().cloned().collect();
        for call in calls {
            call.hang_up(cause::NORMAL_CLEARING).await;
        }
        for (_, token) in self.trunks.read().unwrap_or_else(|p| p.into_inner()).iter() {
            token.cancel();
        }
        self.cancel.cancel();
    }

    fn calls_map(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<SipCall>>> {
        self.calls.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The call carried under `callid`.
    pub(crate) fn call(&self, callid: &str) -> Option<Arc<SipCall>> {
        self.calls_map().get(callid).cloned()
    }

    pub(crate) fn call_by_sip_id(&self, sip_call_id: &str) -> Option<Arc<SipCall>> {
        let callid = self
            .by_sip_call_id
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(sip_call_id)
            .cloned()?;
        self.call(&callid)
    }

    /// Carries `call` from now on, and follows its dialog's states until it ends.
    pub(crate) fn register(self: &Arc<Self>, call: Arc<SipCall>, states: DialogStateReceiver) {
        self.by_sip_call_id
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(call.sip_call_id.clone(), call.callid.clone());
        self.calls_map().insert(call.callid.clone(), call.clone());
        tokio::spawn(self.clone().follow(call, states));
    }

    fn forget(&self, call: &SipCall) {
        self.calls_map().remove(&call.callid);
        self.by_sip_call_id
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&call.sip_call_id);
        self.dialogs.remove_dialog(&call.dialog.id());
    }

    /// Follows a call's dialog: requests within it are answered (a new offer, keys sent as
    /// SIP INFO, OPTIONS), and when the far end ends it, the call ends.
    async fn follow(self: Arc<Self>, call: Arc<SipCall>, mut states: DialogStateReceiver) {
        let far = match call.direction {
            Direction::Inbound => HangupSource::Caller,
            Direction::Outbound => HangupSource::Callee,
        };
        loop {
            let state = tokio::select! {
                s = states.recv() => s,
                () = call.over.cancelled() => None,
            };
            let Some(state) = state else { break };
            if let Some((q850, source)) = within_dialog(&call, state, far).await {
                call.ended_by_far_end(q850, source).await;
                break;
            }
        }
        // Ended by us (hang_up) or by the far end: either way it is no longer carried.
        if !call.is_over() {
            call.ended_by_far_end(cause::NORMAL_CLEARING, far).await;
        }
        self.forget(&call);
    }

    /// The trunk a request from `ip` comes through.
    pub(crate) fn trunk_from(&self, ip: IpAddr) -> Option<Arc<Trunk>> {
        self.trunks
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .find(|(t, _)| t.allows(ip))
            .map(|(t, _)| t.clone())
    }

    /// The trunks with credentials a caller may authenticate with.
    pub(crate) fn trunks_with_credentials(&self) -> Vec<Arc<Trunk>> {
        self.trunks
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .filter(|(t, _)| t.config.username.is_some() && t.config.password.is_some())
            .map(|(t, _)| t.clone())
            .collect()
    }

    /// The running trunk named `name`.
    pub fn trunk(&self, name: &str) -> Option<Arc<Trunk>> {
        self.trunks
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .find(|(t, _)| t.name() == name)
            .map(|(t, _)| t.clone())
    }

    /// Every trunk with its health.
    pub fn trunk_statuses(&self) -> Vec<TrunkStatus> {
        self.trunks
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .map(|(t, _)| {
                let mut config = t.config.clone();
                config.password = config.password.map(|_| "********".to_owned());
                TrunkStatus {
                    config,
                    health: t.health(),
                }
            })
            .collect()
    }

    /// Stops a trunk: no new calls through it (its calls go on); false when none has
    /// that name.
    pub fn remove_trunk(&self, name: &str) -> bool {
        let mut trunks = self.trunks.write().unwrap_or_else(|p| p.into_inner());
        let Some(at) = trunks.iter().position(|(t, _)| t.name() == name) else {
            return false;
        };
        let (_, token) = trunks.remove(at);
        token.cancel();
        true
    }

    /// Our Contact for calls: `sip:dialtone@ip:port`.
    pub(crate) fn contact(&self, ip: IpAddr) -> Result<rsipstack::sip::Uri, String> {
        let host = match ip {
            IpAddr::V6(v6) => format!("[{v6}]"),
            IpAddr::V4(v4) => v4.to_string(),
        };
        rsipstack::sip::Uri::try_from(format!("sip:dialtone@{host}:{}", self.local.port()).as_str())
            .map_err(|e| e.to_string())
    }

    /// The media of a leg of `trunk` with what was `negotiated` (our payload type `pt`).
    pub(crate) fn leg_config(&self, trunk: &Trunk, negotiated: Negotiated, pt: u8) -> LegConfig {
        LegConfig {
            negotiated,
            codec_pt: pt,
            inband_dtmf: match trunk.config.dtmf {
                DtmfMode::Auto => negotiated.telephone_event.is_none(),
                DtmfMode::Rfc4733 => false,
                DtmfMode::Inband => true,
            },
            jitter_depth: self.config.jitter_packets,
            max_recording_ms: self.config.max_recording_secs * 1000,
            media_timeout_ms: self.config.media_timeout_secs * 1000,
        }
    }

    /// The address written in SDP and Contact for calls of `trunk`.
    pub(crate) fn advertised_ip(&self, trunk: &Trunk) -> IpAddr {
        if let Some(ip) = self.config.public_ip {
            return ip;
        }
        if !self.local.ip().is_unspecified() {
            return self.local.ip();
        }
        // The address this host reaches the trunk from.
        let target = trunk
            .health()
            .addresses
            .first()
            .and_then(|a| a.parse::<IpAddr>().ok());
        target
            .and_then(|ip| {
                let probe = std::net::UdpSocket::bind((IpAddr::from([0, 0, 0, 0]), 0)).ok()?;
                probe.connect((ip, trunk.config.port)).ok()?;
                probe.local_addr().ok().map(|a| a.ip())
            })
            .unwrap_or(IpAddr::from([127, 0, 0, 1]))
    }

    pub(crate) async fn act(&self, callid: &str, action: &CallAction) -> Result<(), String> {
        let Some(call) = self.call(callid) else {
            return match action {
                // The call already ended: nothing to do.
                CallAction::HangUp { .. } => Ok(()),
                _ => Err(format!("no call {callid} on this node")),
            };
        };
        match action {
            CallAction::Answer => call.answer().await,
            CallAction::Ringing => call.ringing(),
            CallAction::Say {
                text,
                language,
                tag,
            } => self.say(&call, text, language.as_deref(), *tag).await,
            CallAction::Play { audio_file, tag } => {
                let audio = self.platform.audio(callid, audio_file).await;
                self.play(&call, audio, *tag).await
            }
            CallAction::Collect { .. } => {
                if let Ok(leg) = call.media_leg().await {
                    leg.send(MediaCommand::BargeIn).await;
                }
                Ok(())
            }
            CallAction::Record {
                max_ms,
                finish_on_key,
            } => {
                let leg = call.media_leg().await?;
                let finish = finish_on_key.as_deref().and_then(|k| k.chars().next());
                leg.send(MediaCommand::Record {
                    max_ms: *max_ms,
                    finish,
                    beep: self.beep.clone(),
                })
                .await;
                Ok(())
            }
            CallAction::StartRecording => {
                call.media_leg()
                    .await?
                    .send(MediaCommand::StartCallRecording)
                    .await;
                Ok(())
            }
            CallAction::Bridge { with } => {
                let other = self
                    .call(with)
                    .ok_or_else(|| format!("no call {with} on this node to bridge with"))?;
                let (a, b) = (call.media_leg().await?, other.media_leg().await?);
                a.send(MediaCommand::Bridge(Some(b.clone()))).await;
                b.send(MediaCommand::Bridge(Some(a))).await;
                Ok(())
            }
            CallAction::HangUp { cause } => {
                call.hang_up(*cause).await;
                Ok(())
            }
        }
    }

    /// Speaks `text` piece by piece ([`crate::prompt::pieces`]): each is queued as soon as
    /// it is made, the last with the tag that reports the end.
    async fn say(
        &self,
        call: &Arc<SipCall>,
        text: &str,
        language: Option<&str>,
        tag: Option<dialtone_carrier::voice::PlayTag>,
    ) -> Result<(), String> {
        let started = std::time::Instant::now();
        let parts = crate::prompt::pieces(text);
        let Some(last) = parts.len().checked_sub(1) else {
            call.unplayed(tag);
            return Ok(());
        };
        for (i, part) in parts.iter().enumerate() {
            let spoken = self.platform.speak(part, language).await;
            let cached = spoken.as_ref().is_ok_and(|s| s.cached);
            let tagged = if i == last { tag } else { None };
            let played = self.play(call, spoken.map(|s| s.pcm), tagged).await;
            if i == 0 && played.is_ok() {
                self.first_audio.record(started.elapsed(), cached);
            }
            if i == last {
                return played;
            }
            if let Err(e) = played {
                tracing::debug!(callid = %call.callid, error = %e, "sip: a sentence was not spoken");
            }
        }
        Ok(())
    }

    async fn play(
        &self,
        call: &Arc<SipCall>,
        audio: Result<Pcm, String>,
        tag: Option<dialtone_carrier::voice::PlayTag>,
    ) -> Result<(), String> {
        let leg = match (audio, call.media_leg().await) {
            (Ok(pcm), Ok(leg)) => {
                if leg.send(MediaCommand::Play(pcm, tag)).await {
                    return Ok(());
                }
                "the call's media is over".to_owned()
            }
            (Err(e), _) | (_, Err(e)) => e,
        };
        call.unplayed(tag);
        Err(leg)
    }
}

/// Answers what happens within a call's dialog; the cause and source of its end, when it
/// ended.
async fn within_dialog(
    call: &SipCall,
    state: DialogState,
    far: HangupSource,
) -> Option<(i64, HangupSource)> {
    use rsipstack::sip::StatusCode;
    let answered = match state {
        DialogState::Terminated(_, reason) => return Some(end_of(call, reason, far)),
        DialogState::Updated(_, request, handle) => {
            call.renegotiate(&request.body, handle).await;
            return None;
        }
        DialogState::Info(_, request, handle) => {
            if let Some(keys) = info_keys(&request.body) {
                call.report(dialtone_carrier::voice::CallEvent::Digits(keys));
            }
            handle.reply(StatusCode::OK).await
        }
        DialogState::Options(_, _, handle) | DialogState::Notify(_, _, handle) => {
            handle.reply(StatusCode::OK).await
        }
        // Transfers are not carried: the scenario decides where a call goes.
        DialogState::Refer(_, _, handle) => handle.reply(StatusCode::Decline).await,
        DialogState::Message(_, _, handle) | DialogState::Publish(_, _, handle) => {
            handle.reply(StatusCode::NotImplemented).await
        }
        DialogState::Calling(_)
        | DialogState::Trying(_)
        | DialogState::Early(_, _)
        | DialogState::WaitAck(_, _)
        | DialogState::Confirmed(_, _) => Ok(()),
    };
    if answered.is_err() {
        tracing::debug!(callid = %call.callid, "sip: a request within the dialog was not answered");
    }
    None
}

/// The Q.850 cause and source of a dialog's end.
fn end_of(call: &SipCall, reason: TerminatedReason, far: HangupSource) -> (i64, HangupSource) {
    let remote = *call.remote_cause.lock().unwrap_or_else(|p| p.into_inner());
    match reason {
        TerminatedReason::Timeout => (cause::TIMER_EXPIRY, HangupSource::System),
        TerminatedReason::UacCancel => (cause::NORMAL_CLEARING, far),
        TerminatedReason::UacBye | TerminatedReason::UasBye => {
            (remote.unwrap_or(cause::NORMAL_CLEARING), far)
        }
        TerminatedReason::UacBusy | TerminatedReason::UasBusy => (cause::USER_BUSY, far),
        TerminatedReason::UasDecline => (cause::CALL_REJECTED, far),
        TerminatedReason::ProxyAuthRequired => (cause::CALL_REJECTED, HangupSource::System),
        TerminatedReason::ProxyError(code)
        | TerminatedReason::UacOther(code)
        | TerminatedReason::UasOther(code) => (cause::cause_of_status(code.code()), far),
    }
}

/// The key of a SIP INFO (`application/dtmf-relay`: `Signal=5`, or `application/dtmf`: `5`).
fn info_keys(body: &[u8]) -> Option<String> {
    let text = std::str::from_utf8(body).ok()?.trim();
    let value = text
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once('=')?;
            k.trim().eq_ignore_ascii_case("signal").then(|| v.trim())
        })
        .unwrap_or(text);
    let key = value.chars().next()?.to_ascii_uppercase();
    ("0123456789*#ABCD".contains(key) && value.chars().count() == 1).then(|| key.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_of_sip_info() {
        assert_eq!(
            info_keys(b"Signal=5\r\nDuration=160\r\n").as_deref(),
            Some("5")
        );
        assert_eq!(info_keys(b"Signal= #\r\n").as_deref(), Some("#"));
        assert_eq!(info_keys(b"*").as_deref(), Some("*"));
        assert_eq!(info_keys(b"Signal=55"), None);
        assert_eq!(info_keys(b"hello"), None);
        assert_eq!(info_keys(b""), None);
    }
}
