//! SDP offer/answer (RFC 3264) for one audio stream: G.711 µ-law or A-law, with RFC 4733
//! telephone-events when the far end has them. The far end's SDP is parsed with
//! `sdp-types`; ours is a fixed, minimal text written here.

use std::net::{IpAddr, SocketAddr};

use sdp_types::Session;
use sdp_types::attributes::RtpMap;

use crate::media::g711::Codec;

/// The payload type we offer telephone-events on (the common dynamic choice).
pub const TELEPHONE_EVENT_PT: u8 = 101;

/// What two ends agreed for a call's audio.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Negotiated {
    /// The codec both send.
    pub codec: Codec,
    /// The payload type of telephone-events, when both have them.
    pub telephone_event: Option<u8>,
    /// Where the far end receives RTP (as its SDP says; symmetric RTP may move it).
    pub remote: SocketAddr,
    /// The far end's packet time, in ms (20 unless it asked otherwise).
    pub ptime: u32,
    /// Which way the far end wants the stream (`a=sendrecv`, `sendonly`, ...); an
    /// address of 0.0.0.0 (the old way of holding) is `Inactive`.
    pub direction: StreamDirection,
}

/// The direction attribute of a stream, as the far end gave it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamDirection {
    /// Both ways (the default).
    SendRecv,
    /// The far end sends only (it holds the call and plays music).
    SendOnly,
    /// The far end receives only.
    RecvOnly,
    /// Neither way (held).
    Inactive,
}

impl StreamDirection {
    /// Ours, answering this one.
    pub fn answer(self) -> &'static str {
        match self {
            Self::SendRecv => "sendrecv",
            Self::SendOnly => "recvonly",
            Self::RecvOnly => "sendonly",
            Self::Inactive => "inactive",
        }
    }
}

impl Negotiated {
    /// We send RTP: the far end receives.
    pub fn we_send(&self) -> bool {
        matches!(
            self.direction,
            StreamDirection::SendRecv | StreamDirection::RecvOnly
        )
    }

    /// The far end sends RTP (its silence means it is gone).
    pub fn they_send(&self) -> bool {
        matches!(
            self.direction,
            StreamDirection::SendRecv | StreamDirection::SendOnly
        )
    }
}

/// Why an SDP could not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SdpError {
    /// Not SDP.
    #[error("the SDP does not parse: {0}")]
    Unparsable(String),
    /// No audio stream on RTP/AVP with a port.
    #[error("the SDP has no usable audio stream")]
    NoAudio,
    /// No codec in common.
    #[error("no codec in common (we take {0})")]
    NoCodec(String),
    /// No address to send to.
    #[error("the SDP has no connection address")]
    NoAddress,
}

/// The parts of the far end's audio description we use.
#[derive(Debug, Clone)]
struct RemoteAudio {
    /// Payload types in the order the far end prefers them, each with its codec.
    formats: Vec<(u8, Option<Codec>)>,
    telephone_event: Option<u8>,
    address: SocketAddr,
    ptime: u32,
    direction: StreamDirection,
}

fn remote_audio(body: &[u8]) -> Result<RemoteAudio, SdpError> {
    let session = Session::parse(body).map_err(|e| SdpError::Unparsable(e.to_string()))?;
    let media = session
        .medias
        .iter()
        .find(|m| {
            m.media == "audio" && m.port != 0 && m.proto.to_ascii_uppercase().starts_with("RTP/AVP")
        })
        .ok_or(SdpError::NoAudio)?;
    let connection = media
        .connections
        .first()
        .or(session.connection.as_ref())
        .ok_or(SdpError::NoAddress)?;
    let ip: IpAddr = connection
        .try_address()
        .map_err(|_| SdpError::NoAddress)?
        .ip;
    let maps: Vec<RtpMap> = media
        .attributes_typed::<RtpMap>()
        .filter_map(Result::ok)
        .collect();
    let mut telephone_event = None;
    let mut formats = Vec::new();
    for pt in media.fmt.split_ascii_whitespace() {
        let Ok(pt) = pt.parse::<u8>() else { continue };
        let map = maps.iter().find(|m| m.payload_type == pt);
        let codec = match map {
            Some(m) if m.encoding_name.eq_ignore_ascii_case("telephone-event") => {
                if m.clock_rate == 8000 {
                    telephone_event = Some(pt);
                }
                continue;
            }
            Some(m) if m.clock_rate == 8000 => Codec::from_name(&m.encoding_name),
            Some(_) => None,
            None => Codec::from_static(pt),
        };
        formats.push((pt, codec));
    }
    let attribute = |name: &str| {
        media.has_attribute(name) || session.attributes.iter().any(|a| a.attribute == name)
    };
    let ptime = media
        .get_first_attribute_value("ptime")
        .flatten()
        .and_then(|v| v.trim().parse::<u32>().ok())
        .filter(|p| (10..=60).contains(p))
        .unwrap_or(20);
    Ok(RemoteAudio {
        formats,
        telephone_event,
        address: SocketAddr::new(ip, media.port),
        ptime,
        direction: if ip.is_unspecified() || attribute("inactive") {
            StreamDirection::Inactive
        } else if attribute("sendonly") {
            StreamDirection::SendOnly
        } else if attribute("recvonly") {
            StreamDirection::RecvOnly
        } else {
            StreamDirection::SendRecv
        },
    })
}

/// Answers an offer: the first codec of the offer's order that `ours` has, and
/// telephone-events when offered.
pub fn answer_offer(offer: &[u8], ours: &[Codec]) -> Result<(Negotiated, u8), SdpError> {
    let remote = remote_audio(offer)?;
    let (pt, codec) = remote
        .formats
        .iter()
        .find_map(|(pt, c)| c.filter(|c| ours.contains(c)).map(|c| (*pt, c)))
        .ok_or_else(|| SdpError::NoCodec(names(ours)))?;
    Ok((
        Negotiated {
            codec,
            telephone_event: remote.telephone_event,
            remote: remote.address,
            ptime: remote.ptime,
            direction: remote.direction,
        },
        pt,
    ))
}

/// Reads the answer to our offer: the codec it kept (the first of its list we offered).
pub fn read_answer(answer: &[u8], offered: &[Codec]) -> Result<Negotiated, SdpError> {
    let (negotiated, _) = answer_offer(answer, offered)?;
    Ok(negotiated)
}

fn names(codecs: &[Codec]) -> String {
    codecs
        .iter()
        .map(|c| c.name())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Our side of a call's SDP: where we receive, and our session's id.
#[derive(Debug, Clone, Copy)]
pub struct Local {
    /// The address written in SDP (the node's public address behind NAT).
    pub ip: IpAddr,
    /// Our RTP port.
    pub port: u16,
    /// Origin session id (and version).
    pub session: u64,
}

fn head(local: &Local) -> String {
    let family = if local.ip.is_ipv6() { "IP6" } else { "IP4" };
    format!(
        "v=0\r\no=dialtone {id} {id} IN {family} {ip}\r\ns=dialtone\r\nc=IN {family} {ip}\r\nt=0 0\r\n",
        id = local.session,
        ip = local.ip,
    )
}

/// Our answer: the negotiated codec on the far end's payload type, telephone-events on
/// theirs when both have them.
pub fn answer(local: &Local, negotiated: &Negotiated, codec_pt: u8) -> String {
    let mut fmt = codec_pt.to_string();
    let mut attrs = format!("a=rtpmap:{codec_pt} {}/8000\r\n", negotiated.codec.name());
    if let Some(te) = negotiated.telephone_event {
        fmt.push_str(&format!(" {te}"));
        attrs.push_str(&format!(
            "a=rtpmap:{te} telephone-event/8000\r\na=fmtp:{te} 0-16\r\n"
        ));
    }
    format!(
        "{}m=audio {} RTP/AVP {fmt}\r\n{attrs}a=ptime:20\r\na={}\r\n",
        head(local),
        local.port,
        negotiated.direction.answer()
    )
}

/// Our offer: `codecs` in order of preference, and telephone-events.
pub fn offer(local: &Local, codecs: &[Codec]) -> String {
    let mut fmt: Vec<String> = codecs
        .iter()
        .map(|c| c.payload_type().to_string())
        .collect();
    fmt.push(TELEPHONE_EVENT_PT.to_string());
    let mut attrs: String = codecs
        .iter()
        .map(|c| format!("a=rtpmap:{} {}/8000\r\n", c.payload_type(), c.name()))
        .collect();
    attrs.push_str(&format!(
        "a=rtpmap:{TELEPHONE_EVENT_PT} telephone-event/8000\r\na=fmtp:{TELEPHONE_EVENT_PT} 0-16\r\n"
    ));
    format!(
        "{}m=audio {} RTP/AVP {}\r\n{attrs}a=ptime:20\r\na=sendrecv\r\n",
        head(local),
        local.port,
        fmt.join(" ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const SIPP: &str = "v=0\r\no=user1 53655765 2353687637 IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\nm=audio 6000 RTP/AVP 8 101\r\na=rtpmap:8 PCMA/8000\r\na=rtpmap:101 telephone-event/8000\r\na=fmtp:101 0-11,16\r\n";

    #[test]
    fn an_offer_is_answered_with_its_first_codec_we_have() {
        let (n, pt) = answer_offer(SIPP.as_bytes(), &[Codec::Pcmu, Codec::Pcma]).expect("answer");
        assert_eq!(n.codec, Codec::Pcma);
        assert_eq!(pt, 8);
        assert_eq!(n.telephone_event, Some(101));
        assert_eq!(n.remote, "127.0.0.1:6000".parse().expect("addr"));
        assert_eq!(n.direction, StreamDirection::SendRecv);
        let local = Local {
            ip: "10.0.0.1".parse().expect("ip"),
            port: 20000,
            session: 7,
        };
        let text = answer(&local, &n, pt);
        assert!(text.contains("m=audio 20000 RTP/AVP 8 101\r\n"), "{text}");
        assert!(text.contains("c=IN IP4 10.0.0.1\r\n"));
        // Our own answer reads back.
        let back = read_answer(text.as_bytes(), &[Codec::Pcma]).expect("reads");
        assert_eq!(back.remote.port(), 20000);
    }

    #[test]
    fn static_types_without_rtpmap_and_no_common_codec() {
        let offer = "v=0\r\no=- 1 1 IN IP4 192.0.2.9\r\ns=-\r\nt=0 0\r\nm=audio 4000 RTP/AVP 18 0\r\nc=IN IP4 192.0.2.9\r\n";
        let (n, pt) = answer_offer(offer.as_bytes(), &[Codec::Pcma, Codec::Pcmu]).expect("answer");
        assert_eq!((n.codec, pt, n.telephone_event), (Codec::Pcmu, 0, None));
        assert_eq!(
            answer_offer(offer.as_bytes(), &[Codec::Pcma]).err(),
            Some(SdpError::NoCodec("PCMA".into()))
        );
    }

    #[test]
    fn unusable_offers_are_refused() {
        assert!(matches!(
            answer_offer(b"hello", &[Codec::Pcmu]),
            Err(SdpError::Unparsable(_))
        ));
        let video = "v=0\r\no=- 1 1 IN IP4 192.0.2.9\r\ns=-\r\nc=IN IP4 192.0.2.9\r\nt=0 0\r\nm=video 4000 RTP/AVP 96\r\n";
        assert_eq!(
            answer_offer(video.as_bytes(), &[Codec::Pcmu]).err(),
            Some(SdpError::NoAudio)
        );
        let held = "v=0\r\no=- 1 1 IN IP4 0.0.0.0\r\ns=-\r\nc=IN IP4 0.0.0.0\r\nt=0 0\r\nm=audio 4000 RTP/AVP 0\r\na=sendonly\r\n";
        let (n, _) = answer_offer(held.as_bytes(), &[Codec::Pcmu]).expect("answer");
        assert_eq!(n.direction, StreamDirection::Inactive);
        assert!(!n.we_send() && !n.they_send());
        let music = held.replace("0.0.0.0", "192.0.2.1");
        let (n, pt) = answer_offer(music.as_bytes(), &[Codec::Pcmu]).expect("answer");
        assert_eq!(n.direction, StreamDirection::SendOnly);
        assert!(n.they_send() && !n.we_send());
        let local = Local {
            ip: "10.0.0.1".parse().expect("ip"),
            port: 20000,
            session: 7,
        };
        assert!(answer(&local, &n, pt).contains("a=recvonly\r\n"));
    }

    #[test]
    fn our_offer_lists_codecs_and_events() {
        let local = Local {
            ip: "127.0.0.1".parse().expect("ip"),
            port: 30000,
            session: 1,
        };
        let text = offer(&local, &[Codec::Pcmu, Codec::Pcma]);
        assert!(text.contains("m=audio 30000 RTP/AVP 0 8 101\r\n"), "{text}");
        let n = read_answer(text.as_bytes(), &[Codec::Pcma, Codec::Pcmu]).expect("reads");
        assert_eq!(n.codec, Codec::Pcmu);
        assert_eq!(n.telephone_event, Some(101));
    }
}
