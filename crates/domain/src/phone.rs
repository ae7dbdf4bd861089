//! Phone numbers in E.164, validated against the numbering plan.

use std::fmt;

/// A valid E.164 phone number such as `+447700900123`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct E164(String);

/// Why a phone number was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidNumber {
    /// Not `+` followed by 8 to 15 digits.
    #[error("must be an E.164 phone number: + and 8 to 15 digits")]
    Format,
    /// Well formed but not a number of the numbering plan.
    #[error("is not a valid phone number in its country's numbering plan")]
    NotInPlan,
}

impl E164 {
    /// Parses and validates against the numbering plan (the phonenumber crate). The
    /// fictional ranges reserved for drama and testing are accepted too, because the
    /// simulated network routes on them.
    pub fn parse(text: &str) -> Result<Self, InvalidNumber> {
        Self::parse_format(text)?;
        if fictional_country(text).is_some() {
            return Ok(Self(text.to_owned()));
        }
        let parsed = phonenumber::parse(None, text).map_err(|_| InvalidNumber::NotInPlan)?;
        if !phonenumber::is_valid(&parsed) {
            return Err(InvalidNumber::NotInPlan);
        }
        Ok(Self(text.to_owned()))
    }

    /// Loads the numbering plan now. The phonenumber crate compiles every country's patterns
    /// on first use (about 150 ms); the server calls this on a background thread at start so
    /// that it is ready to serve before that, and a request that checks a number meanwhile
    /// waits for the load instead of starting a second one.
    pub fn warm_up() {
        let _ = phonenumber::parse(None, "+33612345678");
    }

    /// Checks only the E.164 shape (`+`, first digit 1-9, 8 to 15 digits in all).
    pub fn parse_format(text: &str) -> Result<Self, InvalidNumber> {
        let digits = text.strip_prefix('+').ok_or(InvalidNumber::Format)?;
        let ok = (8..=15).contains(&digits.len())
            && digits.bytes().all(|b| b.is_ascii_digit())
            && !digits.starts_with('0');
        if ok {
            Ok(Self(text.to_owned()))
        } else {
            Err(InvalidNumber::Format)
        }
    }

    /// A number written in `country`'s national form (`0699887707` in `FR`) as E.164
    /// (`+33699887707`), when it is a valid number there. `country` is ISO 3166 alpha-2.
    pub fn from_national(digits: &str, country: &str) -> Option<Self> {
        let id: phonenumber::country::Id = country.to_ascii_uppercase().parse().ok()?;
        let parsed = phonenumber::parse(Some(id), digits).ok()?;
        // Validated by `parse`, which also knows the fictional ranges.
        let e164 = parsed.format().mode(phonenumber::Mode::E164).to_string();
        Self::parse(&e164).ok()
    }

    /// Whether `country` is an ISO 3166 alpha-2 code the numbering plan knows.
    pub fn is_plan_country(country: &str) -> bool {
        country.len() == 2
            && country
                .to_ascii_uppercase()
                .parse::<phonenumber::country::Id>()
                .is_ok()
    }

    /// Wraps a value read back from the store.
    pub fn from_stored(text: String) -> Self {
        Self(text)
    }

    /// The number with its leading `+`.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The digits without `+`.
    pub fn digits(&self) -> &str {
        &self.0[1..]
    }

    /// The line type as scenarios see it in `call.fromType`: `MOBILE`, `LANDLINE`,
    /// `TOLLFREE` or `UNKNOWN` (the fictional drama range is mobile).
    pub fn line_type(&self) -> &'static str {
        if fictional_country(&self.0).is_some() {
            return "MOBILE";
        }
        let Ok(parsed) = phonenumber::parse(None, &self.0) else {
            return "UNKNOWN";
        };
        match parsed.number_type(&phonenumber::metadata::DATABASE) {
            phonenumber::Type::Mobile => "MOBILE",
            phonenumber::Type::FixedLine | phonenumber::Type::FixedLineOrMobile => "LANDLINE",
            phonenumber::Type::TollFree => "TOLLFREE",
            _ => "UNKNOWN",
        }
    }

    /// ISO 3166 alpha-2 country of the number, when the numbering plan knows it.
    pub fn country(&self) -> Option<String> {
        if let Some(country) = fictional_country(&self.0) {
            return Some(country.to_owned());
        }
        let parsed = phonenumber::parse(None, &self.0).ok()?;
        parsed.country().id().map(|id| format!("{id:?}"))
    }
}

/// Ranges set aside by regulators for fiction and testing, which libphonenumber treats as
/// unallocated: (prefix, number length with `+`, country).
const FICTIONAL_RANGES: &[(&str, usize, &str)] = &[
    // Ofcom: 07700 900000 to 07700 900999, mobile numbers for drama.
    ("+447700900", 13, "GB"),
];

/// The country of a number in a fictional range, if it is in one.
pub fn fictional_country(text: &str) -> Option<&'static str> {
    FICTIONAL_RANGES
        .iter()
        .find(|(prefix, len, _)| text.len() == *len && text.starts_with(prefix))
        .map(|(_, _, country)| *country)
}

impl fmt::Display for E164 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn national_numbers_with_their_country() {
        assert_eq!(
            E164::from_national("0699887707", "FR").map(|n| n.as_str().to_owned()),
            Some("+33699887707".to_owned())
        );
        assert_eq!(
            E164::from_national("07700900123", "gb").map(|n| n.as_str().to_owned()),
            Some("+447700900123".to_owned())
        );
        assert!(E164::from_national("0699887707", "ZZ").is_none());
        assert!(E164::from_national("12", "FR").is_none());
        assert!(E164::is_plan_country("FR"));
        assert!(!E164::is_plan_country("XX"));
    }

    #[test]
    fn accepts_valid_numbers() {
        for n in [
            "+447700900123",
            "+447700900001",
            "+33612345678",
            "+14155552671",
        ] {
            assert!(E164::parse(n).is_ok(), "{n}");
        }
        assert_eq!(
            E164::parse("+33612345678").unwrap().country().as_deref(),
            Some("FR")
        );
        assert_eq!(
            E164::parse("+447700900123").unwrap().country().as_deref(),
            Some("GB")
        );
        assert!(E164::parse("+4477009001234").is_err());
    }

    #[test]
    fn rejects_bad_shapes_and_plan_violations() {
        for n in [
            "447700900123",
            "+0447700900",
            "+4477",
            "+4477009001234567",
            "+44 7700 900123",
            "+33012",
        ] {
            assert!(E164::parse(n).is_err(), "{n}");
        }
        assert_eq!(E164::parse("+999123456789"), Err(InvalidNumber::NotInPlan));
    }
}
