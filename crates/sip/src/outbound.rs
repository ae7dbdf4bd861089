//! A call dialled out through a trunk (`dial@v1`): an INVITE with our offer to
//! `sip:<number>@<trunk>`, digest challenges answered with the trunk's credentials, ringing
//! until the target answers, refuses, or the ring time runs out (then CANCEL), or the call
//! it was dialled from ends (CANCEL too). An answered target becomes a call the node
//! carries under the call id the platform chose.

use std::sync::Arc;
use std::time::Duration;

use dialtone_carrier::voice::{Dial, DialOutcome};
use rsipstack::dialog::authenticate::Credential;
use rsipstack::dialog::invitation::InviteOption;
use rsipstack::sip::{Header, StatusCodeKind, Uri};

use crate::call::{Direction, Parts, SipCall};
use crate::config::Transport;
use crate::node::SipNode;
use crate::trunk::Trunk;
use crate::{cause, sdp};

fn target_uri(trunk: &Trunk, number: &str) -> Result<Uri, String> {
    let host = if trunk.config.host.contains(':') && !trunk.config.host.starts_with('[') {
        format!("[{}]", trunk.config.host)
    } else {
        trunk.config.host.clone()
    };
    let (scheme, params) = match trunk.config.transport {
        Transport::Udp => ("sip", String::new()),
        Transport::Tcp => ("sip", ";transport=tcp".to_owned()),
        Transport::Tls => ("sips", ";transport=tls".to_owned()),
    };
    let text = format!("{scheme}:{number}@{host}:{}{params}", trunk.config.port);
    Uri::try_from(text.as_str()).map_err(|e| format!("{text}: {e}"))
}

/// Dials `dial.to` through `trunk`; answers how it went. An answered leg is carried under
/// `dial.callid`.
pub(crate) async fn dial(node: &Arc<SipNode>, trunk: &Arc<Trunk>, dial: &Dial) -> DialOutcome {
    match place(node, trunk, dial).await {
        Ok(outcome) => outcome,
        Err(e) => {
            trunk.failed(format!("dial {}: {e}", dial.to));
            DialOutcome::Failed
        }
    }
}

/// The INVITE of a dial: our offer, the trunk's credentials.
fn invite_option(
    node: &SipNode,
    trunk: &Trunk,
    dial: &Dial,
    offer: &str,
) -> Result<InviteOption, String> {
    let ip = node.advertised_ip(trunk);
    let callee = target_uri(trunk, &dial.to)?;
    let from_user = if dial.from.is_empty() {
        "anonymous"
    } else {
        dial.from.as_str()
    };
    let contact = node.contact(ip)?;
    let caller = Uri::try_from(format!("sip:{from_user}@{}", contact.host_with_port).as_str())
        .map_err(|e| e.to_string())?;
    let credential = match (&trunk.config.username, &trunk.config.password) {
        (Some(username), Some(password)) => Some(Credential {
            username: username.clone(),
            password: password.clone(),
            realm: trunk.config.realm.clone(),
            ..Credential::default()
        }),
        _ => None,
    };
    Ok(InviteOption {
        caller,
        callee,
        contact,
        credential,
        content_type: Some("application/sdp".to_owned()),
        offer: Some(offer.as_bytes().to_vec()),
        ..InviteOption::default()
    })
}

async fn place(
    node: &Arc<SipNode>,
    trunk: &Arc<Trunk>,
    dial: &Dial,
) -> Result<DialOutcome, String> {
    let slot = trunk.take().map_err(|r| r.text)?;
    let socket = node.ports.bind().await.ok_or("no RTP port free")?;
    let port = socket.local_addr().map_err(|e| e.to_string())?.port();
    let codecs = trunk.config.codecs();
    let local = sdp::Local {
        ip: node.advertised_ip(trunk),
        port,
        session: rand::random::<u32>().into(),
    };
    let offer = sdp::offer(&local, &codecs);
    let option = invite_option(node, trunk, dial, &offer)?;
    let (states_tx, states_rx) = node.dialogs.new_dialog_state_channel();
    let (dialog, answer) = node
        .dialogs
        .do_invite_async(option, states_tx)
        .map_err(|e| e.to_string())?;
    let parent_over = node.call(&dial.parent_callid).map(|c| c.over.clone());
    let ring = Duration::from_millis(dial.ring_ms.min(node.config.max_ring_secs * 1000));
    let answered = tokio::select! {
        result = answer => result,
        () = tokio::time::sleep(ring) => {
            dialog.cancel().await.ok();
            return Ok(DialOutcome::NoAnswer);
        }
        () = async { match &parent_over { Some(t) => t.cancelled().await, None => std::future::pending().await } } => {
            dialog.cancel().await.ok();
            return Ok(DialOutcome::Failed);
        }
    };
    let response = match answered {
        Ok(Ok((_, Some(response)))) => response,
        Ok(Ok((_, None))) => return Ok(DialOutcome::Failed),
        Ok(Err(e)) => return Err(e.to_string()),
        Err(e) => return Err(e.to_string()),
    };
    if response.status_code.kind() != StatusCodeKind::Successful {
        return Ok(cause::dial_outcome(response.status_code.code()));
    }
    let negotiated = match sdp::read_answer(&response.body, &codecs) {
        Ok(n) => n,
        Err(e) => {
            let reason = cause::reason_header(cause::BEARER_UNAVAILABLE, &e.to_string());
            dialog
                .bye_with_headers(Some(vec![Header::Reason(reason.into())]))
                .await
                .ok();
            return Err(e.to_string());
        }
    };
    let connected = Connected {
        local,
        slot,
        dialog,
        offer,
        socket,
        negotiated,
    };
    carry(node, trunk, dial, connected, states_rx).await;
    Ok(DialOutcome::Answered)
}

/// A dialled target that answered.
struct Connected {
    local: sdp::Local,
    slot: crate::trunk::Slot,
    dialog: rsipstack::dialog::invite_dialog::InviteDialog,
    offer: String,
    socket: tokio::net::UdpSocket,
    negotiated: sdp::Negotiated,
}

/// Carries an answered target under the call id the platform chose, media running.
async fn carry(
    node: &Arc<SipNode>,
    trunk: &Trunk,
    dial: &Dial,
    c: Connected,
    states: rsipstack::dialog::dialog::DialogStateReceiver,
) {
    let negotiated = c.negotiated;
    let leg = node.leg_config(trunk, negotiated, negotiated.codec.payload_type());
    let sip_call_id = c.dialog.id().call_id.clone();
    let call = SipCall::new(
        Parts {
            callid: dial.callid.clone(),
            sip_call_id,
            slot: c.slot,
            dialog: c.dialog,
            direction: Direction::Outbound,
            local_sdp: c.offer,
            local: c.local,
            codecs: trunk.config.codecs(),
            socket: c.socket,
            leg,
            answered: true,
        },
        node.platform.clone(),
        node.stats.clone(),
    );
    node.register(call.clone(), states);
    call.leg().await;
}
