//! A call coming in: an INVITE is taken only from a trunk (its addresses, or a caller that
//! answers our digest challenge with a trunk's credentials), within the trunk's caps, to an
//! E.164 number, with an SDP offer we can answer; the platform then takes it (the call
//! rings and its scenario starts) or refuses it with a cause. dialtone is never an open
//! relay: anything else is refused before the platform hears of it.

use std::net::IpAddr;
use std::sync::Arc;

use rsipstack::dialog::authenticate::verify_digest;
use rsipstack::sip::prelude::HeadersExt;
use rsipstack::sip::typed::Authorization;
use rsipstack::sip::{Header, Method, StatusCode};
use rsipstack::transaction::transaction::Transaction;
use rsipstack::transport::SipConnection;

use crate::call::{Direction, Parts, SipCall};
use crate::media::LegConfig;
use crate::node::SipNode;
use crate::platform::{Admission, IncomingCall, Refusal};
use crate::trunk::{Slot, Trunk};
use crate::{cause, sdp};

/// The address a request came from (the transport's view, through Via `received`).
pub(crate) fn source_ip(tx: &Transaction) -> Option<IpAddr> {
    let via = tx.original.via_header().ok()?;
    let (_, host) = SipConnection::parse_target_from_via(via).ok()?;
    match host.host {
        rsipstack::sip::Host::IpAddr(ip) => Some(ip),
        rsipstack::sip::Host::Domain(_) => None,
    }
}

/// Who is calling, as far as authentication goes.
enum Caller {
    Trunk(Arc<Trunk>),
    Challenge(String),
    Refused,
    /// An address refused too often this minute: not answered at all (no amplification,
    /// no state kept for it).
    Ignored,
}

fn authenticate(node: &SipNode, tx: &Transaction, ip: IpAddr) -> Caller {
    if let Some(trunk) = node.trunk_from(ip) {
        return Caller::Trunk(trunk);
    }
    if node.auth.locked_out(ip) {
        return Caller::Ignored;
    }
    let candidates = node.trunks_with_credentials();
    if candidates.is_empty() {
        node.auth.failed(ip);
        return Caller::Refused;
    }
    let given = tx.original.headers.iter().find_map(|h| match h {
        Header::ProxyAuthorization(a) => Some(a.value().to_owned()),
        _ => None,
    });
    if let Some(raw) = given {
        let verified = Authorization::parse(&raw).ok().and_then(|auth| {
            if !node.auth.nonce_is_ours(&auth.nonce) {
                return None;
            }
            candidates.into_iter().find(|t| {
                t.config.username.as_deref() == Some(auth.username.as_str())
                    && auth.realm == realm(t)
                    && t.config
                        .password
                        .as_deref()
                        .is_some_and(|p| verify_digest(&auth, p, &Method::Invite, &raw))
            })
        });
        return match verified {
            Some(trunk) => Caller::Trunk(trunk),
            None => {
                node.auth.failed(ip);
                Caller::Refused
            }
        };
    }
    // One realm per trunk: the first trunk with credentials names the challenge; a caller
    // of another trunk answers with that trunk's realm in vain, so trunks that take
    // callers by credentials should share a realm.
    let realm = candidates.first().map(|t| realm(t)).unwrap_or_default();
    Caller::Challenge(format!(
        "Digest realm=\"{realm}\", nonce=\"{}\", algorithm=MD5",
        node.auth.nonce()
    ))
}

fn realm(trunk: &Trunk) -> String {
    trunk
        .config
        .realm
        .clone()
        .unwrap_or_else(|| trunk.config.name.clone())
}

/// The E.164 form of a SIP user part (`+441632960000`, or digits a trunk sent without
/// the plus).
pub(crate) fn e164(user: &str) -> Option<String> {
    let user = user.split(';').next().unwrap_or_default();
    let digits = user.strip_prefix('+').unwrap_or(user);
    (!digits.is_empty() && digits.len() <= 15 && digits.chars().all(|c| c.is_ascii_digit()))
        .then(|| format!("+{digits}"))
}

async fn refuse(tx: &mut Transaction, refusal: &Refusal) -> rsipstack::Result<()> {
    let status = refusal
        .status
        .unwrap_or_else(|| cause::status_of_cause(refusal.cause));
    let reason = cause::reason_header(refusal.cause, &refusal.text);
    tx.reply_with(status.into(), vec![Header::Reason(reason.into())], None)
        .await
}

/// The trunk an INVITE from `ip` comes through; None when it was answered here (a
/// challenge, a refusal) or ignored.
async fn trunk_of(
    node: &SipNode,
    tx: &mut Transaction,
    ip: IpAddr,
) -> rsipstack::Result<Option<Arc<Trunk>>> {
    match authenticate(node, tx, ip) {
        Caller::Trunk(trunk) => Ok(Some(trunk)),
        Caller::Challenge(challenge) => {
            let header = Header::Other("Proxy-Authenticate".into(), challenge);
            tx.reply_with(StatusCode::ProxyAuthenticationRequired, vec![header], None)
                .await?;
            Ok(None)
        }
        Caller::Refused => {
            refuse(
                tx,
                &Refusal::new(cause::CALL_REJECTED, "not a trunk of this node"),
            )
            .await?;
            Ok(None)
        }
        Caller::Ignored => Ok(None),
    }
}

/// Handles a new INVITE, to its final answer (or its dialog's confirmation).
pub(crate) async fn invite(node: &Arc<SipNode>, tx: &mut Transaction) -> rsipstack::Result<()> {
    let Some(ip) = source_ip(tx) else {
        return tx.reply(StatusCode::BadRequest).await;
    };
    let Some(trunk) = trunk_of(node, tx, ip).await? else {
        return Ok(());
    };
    tx.send_trying().await.ok();
    let slot = match trunk.take() {
        Ok(slot) => slot,
        Err(refusal) => return refuse(tx, &refusal).await,
    };
    let called = tx.original.uri.user().and_then(e164);
    let Some(to) = called else {
        return refuse(tx, &Refusal::new(1, "not an E.164 number")).await;
    };
    let from = tx
        .original
        .from_header()
        .ok()
        .and_then(|f| f.uri().ok())
        .and_then(|u| u.user().and_then(e164))
        .unwrap_or_else(|| "anonymous".to_owned());
    if tx.original.body.is_empty() {
        let refusal = Refusal {
            status: Some(488),
            ..Refusal::new(cause::BEARER_UNAVAILABLE, "an SDP offer is required")
        };
        return refuse(tx, &refusal).await;
    }
    let (negotiated, pt) = match sdp::answer_offer(&tx.original.body, &trunk.config.codecs()) {
        Ok(n) => n,
        Err(e) => {
            let refusal = Refusal {
                status: Some(488),
                ..Refusal::new(cause::BEARER_UNAVAILABLE, &e.to_string())
            };
            return refuse(tx, &refusal).await;
        }
    };
    let Some(socket) = node.ports.bind().await else {
        return refuse(tx, &Refusal::new(cause::NO_CIRCUIT, "no RTP port free")).await;
    };
    let port = socket.local_addr().map(|a| a.port()).unwrap_or_default();
    let ip = node.advertised_ip(&trunk);
    let local = sdp::Local {
        ip,
        port,
        session: rand::random::<u32>().into(),
    };
    let answer = sdp::answer(&local, &negotiated, pt);
    let contact = node.contact(ip).map_err(rsipstack::Error::Error)?;
    let (states_tx, states_rx) = node.dialogs.new_dialog_state_channel();
    let dialog = node
        .dialogs
        .get_or_create_server_invite(tx, states_tx, None, Some(contact))?;
    let sip_call_id = tx
        .original
        .call_id_header()
        .map(|c| c.value().to_owned())
        .unwrap_or_default();
    let leg = node.leg_config(&trunk, negotiated, pt);
    let pending = Pending {
        local,
        trunk,
        slot,
        from,
        to,
        sip_call_id,
        answer,
        socket,
        leg,
    };
    tokio::spawn(admit(node.clone(), dialog.clone(), pending, states_rx));
    let mut dialog = dialog;
    dialog.handle(tx).await
}

/// An INVITE accepted by the network, waiting for the platform.
struct Pending {
    local: sdp::Local,
    trunk: Arc<Trunk>,
    slot: Slot,
    from: String,
    to: String,
    sip_call_id: String,
    answer: String,
    socket: tokio::net::UdpSocket,
    leg: LegConfig,
}

async fn admit(
    node: Arc<SipNode>,
    dialog: rsipstack::dialog::invite_dialog::InviteDialog,
    p: Pending,
    states: rsipstack::dialog::dialog::DialogStateReceiver,
) {
    let incoming = IncomingCall {
        trunk: p.trunk.name().to_owned(),
        from: p.from,
        to: p.to,
    };
    match node.platform.admit(&incoming).await {
        Admission::Refused(refusal) => {
            let status = refusal
                .status
                .unwrap_or_else(|| cause::status_of_cause(refusal.cause));
            let reason = cause::reason_header(refusal.cause, &refusal.text);
            if let Err(e) = dialog.reject(Some(status.into()), Some(reason)) {
                tracing::debug!(error = %e, "sip: refusal not sent");
            }
            node.dialogs.remove_dialog(&dialog.id());
        }
        Admission::Taken { callid, start } => {
            let call = SipCall::new(
                Parts {
                    callid,
                    sip_call_id: p.sip_call_id,
                    slot: p.slot,
                    dialog,
                    direction: Direction::Inbound,
                    local_sdp: p.answer,
                    local: p.local,
                    codecs: p.trunk.config.codecs(),
                    socket: p.socket,
                    leg: p.leg,
                    answered: false,
                },
                node.platform.clone(),
                node.stats.clone(),
            );
            node.register(call.clone(), states);
            if let Err(e) = call.ringing() {
                tracing::debug!(callid = %call.callid, error = %e, "sip: 180 not sent");
            }
            tokio::spawn(start);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_from_user_parts() {
        assert_eq!(e164("+441632960000").as_deref(), Some("+441632960000"));
        assert_eq!(e164("441632960000").as_deref(), Some("+441632960000"));
        assert_eq!(e164("+4416;phone-context=x").as_deref(), Some("+4416"));
        assert_eq!(e164("alice"), None);
        assert_eq!(e164("+"), None);
        assert_eq!(e164("1234567890123456"), None);
    }
}
