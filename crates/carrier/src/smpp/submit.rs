//! What leaves: the `submit_sm` of each part (addresses, data coding, concatenation,
//! receipt request), and which refusals mean "later".

use rusmpp::CommandStatus;
use rusmpp::pdus::SubmitSm;
use rusmpp::tlvs::MessageSubmissionRequestTlvValue;
use rusmpp::types::{COctetString, EmptyOrFullCOctetString, OctetString};
use rusmpp::values::{
    DataCoding, EsmClass, PriorityFlag, RegisteredDelivery, ReplaceIfPresentFlag, ServiceType,
};

use super::config::{Concatenation, SmppConfig};
use super::{address, text};
use crate::OutboundSms;

/// The `submit_sm` of part `part` (1-based) of `sms`; the SMS's reference ties its parts
/// together, whichever try carries each.
pub(crate) fn pdu(config: &SmppConfig, sms: &OutboundSms, part: usize) -> Result<SubmitSm, String> {
    let (dest_ton, dest_npi, dest) = address::outbound(&sms.to);
    let (src_ton, src_npi, src) = address::outbound(&sms.from);
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
    let total =
        u8::try_from(total).map_err(|_| format!("{total} parts: at most 255 are possible"))?;
    let text = part
        .checked_sub(1)
        .and_then(|i| sms.parts.get(i))
        .ok_or_else(|| format!("the SMS has no part {part}"))?;
    let seq = u8::try_from(part).map_err(|_| format!("no part {part}"))?;
    let mut body = text::encode(text, sms.encoding);
    let mut esm = EsmClass::from(0x00);
    let mut tlvs = Vec::new();
    if total > 1 {
        match config.concatenation {
            Concatenation::Udh => {
                let [low, _] = sms.reference.to_le_bytes();
                let mut with_header = text::concatenation_udh(low, total, seq).to_vec();
                with_header.append(&mut body);
                body = with_header;
                esm = EsmClass::from(0x40);
            }
            Concatenation::Sar => {
                tlvs.push(MessageSubmissionRequestTlvValue::SarMsgRefNum(
                    sms.reference,
                ));
                tlvs.push(MessageSubmissionRequestTlvValue::SarTotalSegments(total));
                tlvs.push(MessageSubmissionRequestTlvValue::SarSegmentSeqnum(seq));
            }
        }
    }
    let short_message =
        OctetString::from_vec(body).map_err(|e| format!("part {part} too long: {e:?}"))?;
    Ok(SubmitSm::new(
        ServiceType::default(),
        src_ton,
        src_npi,
        source,
        dest_ton,
        dest_npi,
        destination,
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
    ))
}

/// What a refused `submit_sm` asks of the connector.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// `ESME_RTHROTTLED`: the connector sends too fast; slow down, then send it again.
    Throttled,
    /// The SMSC cannot take it now (queue full, system error, temporary app error).
    Later,
    /// Sending it again will not help (bad address, bad message...).
    Never,
}

/// How a refusal status is read.
pub(crate) fn refusal(status: CommandStatus) -> Refusal {
    match status {
        CommandStatus::EsmeRthrottled => Refusal::Throttled,
        CommandStatus::EsmeRmsgqful | CommandStatus::EsmeRsyserr | CommandStatus::EsmeRxTAppn => {
            Refusal::Later
        }
        _ => Refusal::Never,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dialtone_domain::sms::Encoding;

    #[test]
    fn parts_carry_udh_or_sar() {
        let mut config = SmppConfig::new("t", "127.0.0.1", 9, "id", "pw");
        let sms = OutboundSms {
            sid: "s".into(),
            from: "+447700900000".into(),
            to: "+33612345678".into(),
            parts: vec!["a".repeat(153), "b".into()],
            encoding: Encoding::Gsm,
            flash: false,
            reference: 0x0207,
        };
        let first = pdu(&config, &sms, 1).unwrap();
        assert_eq!(u8::from(first.esm_class), 0x40);
        assert_eq!(u8::from(first.registered_delivery), 1);
        let second = pdu(&config, &sms, 2).unwrap();
        assert_eq!(&second.short_message().as_ref()[..6], &[5, 0, 3, 7, 2, 2]);
        assert!(pdu(&config, &sms, 3).is_err());
        assert!(pdu(&config, &sms, 0).is_err());
        config.concatenation = Concatenation::Sar;
        let first = pdu(&config, &sms, 1).unwrap();
        assert_eq!(u8::from(first.esm_class), 0);
        assert_eq!(first.tlvs().len(), 3);
        assert_eq!(
            pdu(&config, &sms, 2).unwrap().short_message().as_ref(),
            b"b"
        );
    }
}
