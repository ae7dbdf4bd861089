//! Short-message bytes: GSM 03.38 (one septet per octet, as SMPP carries `data_coding` 0),
//! UCS-2 big-endian, the concatenation user data header, and the decoding of what arrives.

use dialtone_domain::sms::Encoding;

/// The basic table of GSM 03.38, in code order (0x1B, the escape, is a placeholder).
const BASIC: &str = "@£$¥èéùìòÇ\nØø\rÅåΔ_ΦΓΛΩΠΨΣΘΞ\u{1B}ÆæßÉ !\"#¤%&'()*+,-./0123456789:;<=>?¡ABCDEFGHIJKLMNOPQRSTUVWXYZÄÖÑÜ§¿abcdefghijklmnopqrstuvwxyzäöñüà";

/// The extension table of GSM 03.38: each character and its code after the escape.
const EXTENSION: [(char, u8); 10] = [
    ('\u{0C}', 0x0A),
    ('^', 0x14),
    ('{', 0x28),
    ('}', 0x29),
    ('\\', 0x2F),
    ('[', 0x3C),
    ('~', 0x3D),
    (']', 0x3E),
    ('|', 0x40),
    ('€', 0x65),
];

/// SMPP `data_coding` of an encoding: 0 (the SMSC default alphabet, GSM 03.38) or 8 (UCS-2).
pub fn data_coding(encoding: Encoding) -> u8 {
    match encoding {
        Encoding::Gsm => 0x00,
        Encoding::Unicode => 0x08,
    }
}

/// The octets of one part in `encoding`. A character without a GSM form becomes `?`
/// (the domain layer only chooses GSM for text that has one).
pub fn encode(text: &str, encoding: Encoding) -> Vec<u8> {
    match encoding {
        Encoding::Gsm => {
            let mut out = Vec::with_capacity(text.len());
            for c in text.chars() {
                if let Some(i) = BASIC.chars().position(|b| b == c && c != '\u{1B}') {
                    out.push(i as u8);
                } else if let Some((_, code)) = EXTENSION.iter().find(|(e, _)| *e == c) {
                    out.extend([0x1B, *code]);
                } else {
                    out.push(0x3F);
                }
            }
            out
        }
        Encoding::Unicode => text.encode_utf16().flat_map(u16::to_be_bytes).collect(),
    }
}

/// Text of a short message in `data_coding`: GSM 03.38 for 0, IA5/ASCII for 1, Latin-1 for
/// 3, UCS-2 for 8; other codings are read as Latin-1 (nothing is refused: a carrier's odd
/// message is still a message).
pub fn decode(bytes: &[u8], data_coding: u8) -> String {
    match data_coding {
        0x00 => decode_gsm(bytes),
        0x08 => {
            let units: Vec<u16> = bytes
                .chunks(2)
                .map(|c| u16::from_be_bytes([c[0], c.get(1).copied().unwrap_or(0)]))
                .collect();
            String::from_utf16_lossy(&units)
        }
        0x01 => String::from_utf8_lossy(bytes).into_owned(),
        _ => bytes.iter().map(|&b| char::from(b)).collect(),
    }
}

fn decode_gsm(bytes: &[u8]) -> String {
    let basic: Vec<char> = BASIC.chars().collect();
    let mut out = String::with_capacity(bytes.len());
    let mut escaped = false;
    for &b in bytes {
        if escaped {
            escaped = false;
            match EXTENSION.iter().find(|(_, code)| *code == b) {
                Some((c, _)) => out.push(*c),
                None => out.push(' '),
            }
        } else if b == 0x1B {
            escaped = true;
        } else {
            out.push(basic.get(usize::from(b & 0x7F)).copied().unwrap_or('?'));
        }
    }
    out
}

/// The user data header of part `seq` (1-based) of `total`, with the 8-bit reference `ref_num`.
pub fn concatenation_udh(ref_num: u8, total: u8, seq: u8) -> [u8; 6] {
    [0x05, 0x00, 0x03, ref_num, total, seq]
}

/// Where a part sits in a concatenated message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PartOf {
    /// Reference shared by every part.
    pub reference: u16,
    /// Parts in all.
    pub total: u8,
    /// This part (1-based).
    pub seq: u8,
}

/// Splits a short message that starts with a user data header: the concatenation it
/// announces (8-bit or 16-bit reference), and the payload after the header.
pub fn split_udh(bytes: &[u8]) -> (Option<PartOf>, &[u8]) {
    let Some(&len) = bytes.first() else {
        return (None, bytes);
    };
    let end = 1 + usize::from(len);
    let Some(header) = bytes.get(1..end) else {
        return (None, bytes);
    };
    let mut part = None;
    let mut i = 0;
    while i + 1 < header.len() {
        let (id, l) = (header[i], usize::from(header[i + 1]));
        let Some(ie) = header.get(i + 2..i + 2 + l) else {
            break;
        };
        match (id, ie) {
            (0x00, [r, t, s]) => {
                part = Some(PartOf {
                    reference: u16::from(*r),
                    total: *t,
                    seq: *s,
                })
            }
            (0x08, [r1, r2, t, s]) => {
                part = Some(PartOf {
                    reference: u16::from_be_bytes([*r1, *r2]),
                    total: *t,
                    seq: *s,
                })
            }
            _ => {}
        }
        i += 2 + l;
    }
    (part, &bytes[end..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gsm_round_trip_with_extension() {
        let text = "Hello {world} €5 @ ñ";
        let bytes = encode(text, Encoding::Gsm);
        assert_eq!(bytes[0], b'H');
        assert!(bytes.windows(2).any(|w| w == [0x1B, 0x65]));
        assert_eq!(bytes[bytes.len() - 3], 0x00, "@ is code 0");
        assert_eq!(decode(&bytes, 0), text);
    }

    #[test]
    fn ucs2_round_trip() {
        let text = "Привет 😀";
        let bytes = encode(text, Encoding::Unicode);
        assert_eq!(bytes.len(), 2 * text.encode_utf16().count());
        assert_eq!(decode(&bytes, 8), text);
    }

    #[test]
    fn udh_split() {
        let mut sm = concatenation_udh(7, 3, 2).to_vec();
        sm.extend(b"abc");
        let (part, rest) = split_udh(&sm);
        assert_eq!(
            part,
            Some(PartOf {
                reference: 7,
                total: 3,
                seq: 2
            })
        );
        assert_eq!(rest, b"abc");
        let sixteen = [0x06, 0x08, 0x04, 0x01, 0x02, 2, 1, b'x'];
        assert_eq!(split_udh(&sixteen).0.map(|p| p.reference), Some(0x0102));
        assert_eq!(
            split_udh(&[0x09, 0x00]).0,
            None,
            "a short header is ignored"
        );
    }
}
