//! What arrives: each `deliver_sm` read as a receipt or as (a part of) an SMS, and turned
//! into a [`CarrierEvent`]; parts go to the platform one by one, to be kept in its database
//! (a part acknowledged to the SMSC must survive a crash).

use rusmpp::pdus::DeliverSm;
use rusmpp::tlvs::TlvValue;
use tokio::sync::mpsc;

use super::config::SmppConfig;
use super::event::{Ack, CarrierEvent};
use super::session::Delivery;
use super::{address, receipt, text};

/// Turns deliveries into events, each answered once the platform has stored it.
pub(crate) async fn receive_loop(
    config: SmppConfig,
    mut deliveries: mpsc::Receiver<Delivery>,
    events: mpsc::Sender<CarrierEvent>,
) {
    let connector = config.name.clone();
    let country = config.country.as_deref();
    while let Some(Delivery { pdu, answer }) = deliveries.recv().await {
        let event = match read_delivery(&pdu, country) {
            Read::Receipt(receipt) => CarrierEvent::Receipt {
                connector: connector.clone(),
                receipt,
                ack: Ack(vec![answer]),
            },
            Read::Sms {
                from,
                to,
                text,
                part,
            } => CarrierEvent::Inbound {
                connector: connector.clone(),
                from,
                to,
                text,
                part,
                ack: Ack(vec![answer]),
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

fn read_delivery(pdu: &DeliverSm, country: Option<&str>) -> Read {
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
        from: address::inbound(pdu.source_addr.as_str(), pdu.source_addr_ton, country),
        to: address::inbound(pdu.destination_addr.as_str(), pdu.dest_addr_ton, country),
        text: text::decode(body, coding),
        part,
    }
}
