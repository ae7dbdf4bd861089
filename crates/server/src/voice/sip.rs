//! The platform as the SIP network sees it ([`dialtone_sip::Platform`]): a call coming in
//! through a trunk is taken when the number called belongs to an account that may take it
//! and has a scenario (which then runs, as for a sandbox call), refused with its cause
//! otherwise; what the network reports is stored in order, call by call; prompts are the
//! account's audio files and speech.
//!
//! A call to a free platform number is the line that records audio files by phone
//! ([`recording_line`]): it belongs to no account until a code says which file it records,
//! so it is not a call record of the platform, and its reports go to its own task.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use dialtone_carrier::BoxFuture;
use dialtone_carrier::voice::{CallAction, CallEvent, PlayTag, VoiceNetwork};
use dialtone_domain::account::{AccountStatus, BillingMode};
use dialtone_domain::{E164, Sid};
use dialtone_sip::media::Pcm;
use dialtone_sip::{Admission, IncomingCall, Platform, Refusal};
use dialtone_store::calls;
use tokio::sync::mpsc;

use crate::scenarios::call_events;
use crate::scenarios::driver::drive;
use crate::scenarios::inbound_call::{self, Inbound};
use crate::scenarios::stored::Trigger;
use crate::state::{AppState, Shared};

/// Q.850: unallocated number.
const UNALLOCATED: i64 = 1;
/// Q.850: call rejected.
const REJECTED: i64 = 21;

/// The platform of the node's SIP network.
pub(crate) struct SipPlatform {
    state: Weak<Shared>,
    /// Recording-line calls, by call id: their reports.
    lines: Mutex<HashMap<String, mpsc::UnboundedSender<CallEvent>>>,
}

impl SipPlatform {
    /// The platform of `state` (held weakly: the state holds the network that holds this).
    pub(crate) fn new(state: &AppState) -> Arc<Self> {
        Arc::new(Self {
            state: state.downgrade(),
            lines: Mutex::new(HashMap::new()),
        })
    }

    fn state(&self) -> Option<AppState> {
        AppState::upgrade(&self.state)
    }

    fn lines(
        &self,
    ) -> std::sync::MutexGuard<'_, HashMap<String, mpsc::UnboundedSender<CallEvent>>> {
        self.lines.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Platform for SipPlatform {
    fn admit<'a>(&'a self, call: &'a IncomingCall) -> BoxFuture<'a, Admission> {
        Box::pin(async move {
            let Some(state) = self.state() else {
                return Admission::Refused(Refusal::new(41, "the server is stopping"));
            };
            match admit(&state, call).await {
                Ok(Taken::Scenario(admission)) => admission,
                Ok(Taken::RecordingLine) => {
                    let callid = calls::new_callid();
                    let (tx, rx) = mpsc::unbounded_channel();
                    self.lines().insert(callid.clone(), tx);
                    let network = state.networks.voice(&call.trunk);
                    let (from, to) = (call.from.clone(), call.to.clone());
                    let id = callid.clone();
                    Admission::Taken {
                        callid,
                        start: Box::pin(async move {
                            if let Some(network) = network {
                                recording_line(&state, network, &id, &from, &to, rx).await;
                            }
                        }),
                    }
                }
                Err(refusal) => Admission::Refused(refusal),
            }
        })
    }

    fn report<'a>(&'a self, callid: &'a str, event: CallEvent) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let line = self.lines().get(callid).cloned();
            if let Some(line) = line {
                if matches!(event, CallEvent::Hangup { .. }) {
                    self.lines().remove(callid);
                }
                let _ = line.send(event);
                return;
            }
            if let Some(state) = self.state() {
                call_events::report_from_network(&state, callid, event).await;
            }
        })
    }

    fn audio<'a>(&'a self, callid: &'a str, sid: &'a str) -> BoxFuture<'a, Result<Pcm, String>> {
        Box::pin(async move {
            let state = self.state().ok_or("the server is stopping")?;
            let (callid, sid) = (callid.to_owned(), Sid::from_stored(sid.to_owned()));
            let wav = state
                .store
                .read(move |c| {
                    let Some(call) = calls::by_callid_any(c, &callid)? else {
                        return Ok(None);
                    };
                    Ok::<_, dialtone_store::DbError>(
                        dialtone_store::audio_files::converted(c, call.account_id, &sid)?.flatten(),
                    )
                })
                .await
                .map_err(|e| e.to_string())?
                .ok_or("no such audio file ready in the call's account")?;
            dialtone_media::wav_samples(&wav)
                .map(Pcm::from)
                .ok_or_else(|| "the audio file is not 8 kHz PCM".to_owned())
        })
    }

    fn speak<'a>(
        &'a self,
        text: &'a str,
        language: Option<&'a str>,
    ) -> BoxFuture<'a, Result<dialtone_sip::Spoken, String>> {
        Box::pin(async move {
            let state = self.state().ok_or("the server is stopping")?;
            state
                .speech
                .speak(text, language)
                .await
                .map_err(|e| e.to_string())
        })
    }
}

/// The trunks added through `/admin/sip` (a name the file also uses is the file's).
pub(crate) async fn stored_trunks(
    state: &AppState,
) -> anyhow::Result<Vec<dialtone_sip::TrunkConfig>> {
    let rows = state
        .store
        .read(dialtone_store::sip_trunks::all)
        .await
        .map_err(|e| anyhow::anyhow!("cannot read the SIP trunks: {e}"))?;
    let mut out = Vec::new();
    for (name, json) in rows {
        if state.config.sip.iter().any(|t| t.name == name) {
            continue;
        }
        match serde_json::from_str::<dialtone_sip::TrunkConfig>(&json) {
            Ok(t) => out.push(t),
            Err(e) => tracing::error!(%name, error = %e, "sip: stored trunk unreadable, skipped"),
        }
    }
    Ok(out)
}

/// Starts the node's SIP side (`[sip_node]`, or the defaults) with the file's trunks and
/// `more`, and routes calls through it.
pub(crate) async fn start(
    state: &AppState,
    more: Vec<dialtone_sip::TrunkConfig>,
) -> anyhow::Result<Arc<dialtone_sip::SipNode>> {
    let config = state.config.sip_node.clone().unwrap_or_default();
    let mut trunks = state.config.sip.clone();
    trunks.extend(more);
    let node = dialtone_sip::SipNode::start(config, trunks, SipPlatform::new(state)).await?;
    tracing::info!(listen = %node.local_addr(), "sip: listening");
    state.networks.set_sip(node.clone());
    Ok(node)
}

/// What a call coming in becomes.
enum Taken {
    /// A call of an account, with its run.
    Scenario(Admission),
    /// The line that records audio files by phone.
    RecordingLine,
}

/// Whether the number called takes the call: it must be an account's (a free platform
/// number is the recording line), the account must be active and funded, and a scenario
/// must be attached (a number without one is declined, and that is recorded).
async fn admit(state: &AppState, call: &IncomingCall) -> Result<Taken, Refusal> {
    let to = call.to.clone();
    let owner = state
        .store
        .read(move |c| {
            let Some(number) = dialtone_store::numbers::owned::by_e164(c, &to)? else {
                return Ok(None);
            };
            let account = match number.account_id {
                Some(id) => dialtone_store::accounts::by_id(c, id)?,
                None => None,
            };
            Ok::<_, dialtone_store::DbError>(Some(account))
        })
        .await
        .map_err(|e| {
            tracing::error!(error = %format!("{e:#}"), "sip: a call could not be looked up");
            Refusal::new(41, "temporary failure")
        })?;
    let account = match owner {
        None => return Err(Refusal::new(UNALLOCATED, "unallocated number")),
        Some(None) => return Ok(Taken::RecordingLine),
        Some(Some(account)) => account,
    };
    let unfunded =
        account.billing_mode == BillingMode::Prepaid && account.credit <= account.shutdown_level;
    if unfunded {
        return Err(Refusal {
            status: Some(402),
            ..Refusal::new(REJECTED, "insufficient credit")
        });
    }
    if account.status == AccountStatus::Suspended {
        return Err(Refusal::new(REJECTED, "account suspended"));
    }
    let inbound = Inbound {
        caller_account: account.id,
        from: call.from.clone(),
        to: call.to.clone(),
        network: call.trunk.clone(),
    };
    let placed = inbound_call::admit(state, inbound).await.map_err(|e| {
        tracing::error!(error = %e, "sip: a call could not be recorded");
        Refusal::new(41, "temporary failure")
    })?;
    let Some(run) = placed.run else {
        return Err(Refusal::new(
            UNALLOCATED,
            "the number you have called is not allocated",
        ));
    };
    let state = state.clone();
    Ok(Taken::Scenario(Admission::Taken {
        callid: placed.call.callid,
        start: Box::pin(async move {
            if let Err(e) = drive(state, run, vec![Trigger::Due]).await {
                tracing::error!(run, error = %format!("{e:#}"), "a call's run failed");
            }
        }),
    }))
}

/// Waits for the next report of a recording-line call, up to `within`.
async fn next(rx: &mut mpsc::UnboundedReceiver<CallEvent>, within: Duration) -> Option<CallEvent> {
    match tokio::time::timeout(within, rx.recv()).await {
        Ok(Some(CallEvent::Hangup { .. }) | None) | Err(_) => None,
        Ok(Some(event)) => Some(event),
    }
}

/// The line that records audio files by phone, on a real call: it answers, asks for the
/// code (8 digits), records after the beep (to `#`, at most 5 minutes), checks the code and
/// says how it went, then hangs up.
async fn recording_line(
    state: &AppState,
    network: Arc<dyn VoiceNetwork>,
    callid: &str,
    from: &str,
    to: &str,
    mut rx: mpsc::UnboundedReceiver<CallEvent>,
) {
    use crate::media::phone_recording::{self, Accepted, CODE_DIGITS};
    let act = |action: CallAction| {
        let network = network.clone();
        let callid = callid.to_owned();
        async move {
            if let Err(e) = network.act(&callid, &action).await {
                tracing::warn!(callid, error = %e, "recording line");
            }
        }
    };
    act(CallAction::Answer).await;
    act(CallAction::Say {
        text: "Enter your recording code, then speak after the tone. Press pound when done.".into(),
        language: Some("en-US".into()),
        tag: None,
    })
    .await;
    act(CallAction::Collect {
        max_digits: 8,
        timeout_ms: 30_000,
        finish_on_key: None,
    })
    .await;
    let mut code = String::new();
    while code.len() < CODE_DIGITS {
        match next(&mut rx, Duration::from_secs(30)).await {
            Some(CallEvent::Digits(d)) => code.extend(d.chars().filter(char::is_ascii_digit)),
            Some(_) => {}
            None => return act(CallAction::HangUp { cause: 16 }).await,
        }
    }
    act(CallAction::Record {
        max_ms: 300_000,
        finish_on_key: Some("#".into()),
    })
    .await;
    let audio = loop {
        match next(&mut rx, Duration::from_secs(320)).await {
            Some(CallEvent::Audio(wav)) => break wav,
            Some(_) => {}
            None => return,
        }
    };
    let Ok(number) = E164::parse_format(to) else {
        return act(CallAction::HangUp { cause: 16 }).await;
    };
    let said = match phone_recording::accept(state, &number, from, None, &code, audio).await {
        Ok(Accepted::Recorded(_)) => "Thank you, your recording was saved.",
        Ok(Accepted::WrongCode | Accepted::LockedOut { .. }) => "This code is not valid.",
        Err(e) => {
            tracing::warn!(callid, error = %e, "recording line");
            "Your recording could not be saved."
        }
    };
    let tag = PlayTag { run: 0, fiber: 0 };
    act(CallAction::Say {
        text: said.into(),
        language: Some("en-US".into()),
        tag: Some(tag),
    })
    .await;
    while let Some(event) = next(&mut rx, Duration::from_secs(30)).await {
        if event == CallEvent::Played(tag) {
            break;
        }
    }
    act(CallAction::HangUp { cause: 16 }).await;
}
