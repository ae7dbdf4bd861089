//! What leaves: the `submit_sm` of each part (addresses, data coding, concatenation,
//! receipt request), the addresses' platform form, and which refusals mean "later".

use rusmpp::CommandStatus;
use rusmpp::pdus::SubmitSm;
use rusmpp::tlvs::MessageSubmissionRequestTlvValue;
use rusmpp::types::{COctetString, EmptyOrFullCOctetString, OctetString};
use rusmpp::values::{
    DataCoding, EsmClass, Npi, PriorityFlag, RegisteredDelivery, ReplaceIfPresentFlag, ServiceType,
    Ton,
};

use super::config::{Concatenation, SmppConfig};
use super::text;
use crate::OutboundSms;

/// The `submit_sm` of each part of `sms`; `reference` ties the parts together.
pub(crate) fn pdus(
    config: &SmppConfig,
    sms: &OutboundSms,
    reference: u8,
) -> Result<Vec<SubmitSm>, String> {
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
        let short_message =
            OctetString::from_vec(body).map_err(|e| format!("part {} too long: {e:?}", i + 1))?;
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

/// Statuses that say "later", not "never".
pub(crate) fn is_transient(status: CommandStatus) -> bool {
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
pub(crate) fn address(addr: &str) -> (Ton, Npi, String) {
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
pub(crate) fn platform_address(addr: &str, ton: Ton) -> String {
    let international = ton == Ton::International
        || (ton == Ton::Unknown && addr.len() > 8 && addr.bytes().all(|b| b.is_ascii_digit()));
    if international && !addr.starts_with('+') {
        format!("+{addr}")
    } else {
        addr.to_owned()
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
        };
        let pdus = pdus(&config, &sms, 0).unwrap();
        assert_eq!(pdus.len(), 2);
        assert_eq!(u8::from(pdus[0].esm_class), 0x40);
        assert_eq!(&pdus[1].short_message().as_ref()[..6], &[5, 0, 3, 0, 2, 2]);
        assert_eq!(u8::from(pdus[0].registered_delivery), 1);
        config.concatenation = Concatenation::Sar;
        let pdus = super::pdus(&config, &sms, 1).unwrap();
        assert_eq!(u8::from(pdus[0].esm_class), 0);
        assert_eq!(pdus[0].tlvs().len(), 3);
        assert_eq!(pdus[1].short_message().as_ref(), b"b");
    }
}
