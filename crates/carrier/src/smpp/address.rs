//! Addresses on the wire and on the platform: the TON/NPI and digits a `submit_sm` carries
//! for a platform address, and the platform's form of an address an SMSC delivers.
//!
//! An inbound address is made E.164 only when it is one: international (TON 1, or `+`/`00`
//! before the digits), or national (TON 2, or TON 0 with a leading zero) in the connector's
//! `country` and valid there. A national number of an unknown country is kept as the SMSC
//! wrote it, never turned into a fake E.164 number by putting `+` before it.

use dialtone_domain::E164;
use rusmpp::values::{Npi, Ton};

/// TON, NPI and digits of an address: `+` and digits are international E.164, other digits
/// national, anything else alphanumeric.
pub(crate) fn outbound(addr: &str) -> (Ton, Npi, String) {
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

/// The platform's form of an address the SMSC gave with `ton`; `country` is the connector's
/// (ISO 3166 alpha-2), for national numbers.
pub(crate) fn inbound(addr: &str, ton: Ton, country: Option<&str>) -> String {
    let international = |digits: &str| {
        E164::parse(&format!("+{digits}"))
            .ok()
            .map(|n| n.as_str().to_owned())
    };
    let national = |digits: &str| {
        country
            .and_then(|c| E164::from_national(digits, c))
            .map(|n| n.as_str().to_owned())
    };
    let digits_only = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let written = addr.trim();
    // `+` or the international prefix 00 says international whatever the TON.
    if let Some(rest) = written
        .strip_prefix('+')
        .or_else(|| written.strip_prefix("00"))
        && digits_only(rest)
        && matches!(ton, Ton::International | Ton::Unknown)
    {
        return international(rest).unwrap_or_else(|| written.to_owned());
    }
    if !digits_only(written) {
        return written.to_owned();
    }
    let found = match ton {
        Ton::International => international(written),
        Ton::National => national(written),
        // Unknown: a leading zero is a national trunk prefix; otherwise a number valid
        // with its country code in front (what most SMSCs send with TON 0).
        Ton::Unknown if written.starts_with('0') => national(written),
        Ton::Unknown => national(written).or_else(|| international(written)),
        _ => None,
    };
    found.unwrap_or_else(|| written.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outbound_forms() {
        assert_eq!(
            outbound("+33612345678"),
            (Ton::International, Npi::Isdn, "33612345678".into())
        );
        assert_eq!(outbound("Dialtone").0, Ton::Alphanumeric);
        assert_eq!(outbound("36000").0, Ton::Unknown);
    }

    #[test]
    fn inbound_international() {
        assert_eq!(
            inbound("33612345678", Ton::International, None),
            "+33612345678"
        );
        assert_eq!(inbound("33612345678", Ton::Unknown, None), "+33612345678");
        assert_eq!(inbound("0033612345678", Ton::Unknown, None), "+33612345678");
        assert_eq!(
            inbound("+447700900123", Ton::Unknown, None),
            "+447700900123"
        );
    }

    /// A national number is never turned into a fake E.164 number.
    #[test]
    fn inbound_national_needs_the_country() {
        assert_eq!(inbound("0699887707", Ton::Unknown, None), "0699887707");
        assert_eq!(inbound("0699887707", Ton::National, None), "0699887707");
        assert_eq!(inbound("699887707", Ton::National, None), "699887707");
        assert_eq!(
            inbound("0699887707", Ton::Unknown, Some("FR")),
            "+33699887707"
        );
        assert_eq!(
            inbound("0699887707", Ton::National, Some("FR")),
            "+33699887707"
        );
        assert_eq!(
            inbound("699887707", Ton::National, Some("FR")),
            "+33699887707"
        );
        // Not a valid number there: kept as given.
        assert_eq!(inbound("0123", Ton::National, Some("FR")), "0123");
        // Short codes and names stay what they are.
        assert_eq!(inbound("36000", Ton::Unknown, Some("FR")), "36000");
        assert_eq!(inbound("36000", Ton::Unknown, None), "36000");
        assert_eq!(inbound("BANK", Ton::Alphanumeric, Some("FR")), "BANK");
    }
}
