//! Money as integers: hundredths of a cent internally, a decimal string in cents with two
//! decimals in the API ("150000.00" is 1500 EUR). No floating point anywhere.

use std::fmt;

/// An amount of money in hundredths of a cent of the account's currency.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Money(i64);

/// Why a money string was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("must be a decimal amount in cents with at most 2 decimals, such as \"150000.00\"")]
pub struct InvalidMoney;

impl Money {
    /// Zero.
    pub const ZERO: Self = Self(0);

    /// From hundredths of a cent (the stored unit).
    pub const fn from_units(units: i64) -> Self {
        Self(units)
    }

    /// From whole cents.
    pub const fn from_cents(cents: i64) -> Self {
        Self(cents * 100)
    }

    /// Hundredths of a cent (the stored unit).
    pub const fn units(self) -> i64 {
        self.0
    }

    /// Parses a decimal string in cents (`"12"`, `"12.5"`, `"-0.25"`).
    pub fn parse_cents(text: &str) -> Result<Self, InvalidMoney> {
        let (negative, digits) = match text.strip_prefix('-') {
            Some(rest) => (true, rest),
            None => (false, text),
        };
        let (whole, frac) = match digits.split_once('.') {
            Some((w, f)) => (w, f),
            None => (digits, ""),
        };
        if whole.is_empty()
            || !whole.bytes().all(|b| b.is_ascii_digit())
            || frac.len() > 2
            || !frac.bytes().all(|b| b.is_ascii_digit())
            || (digits.contains('.') && frac.is_empty())
        {
            return Err(InvalidMoney);
        }
        let whole: i64 = whole.parse().map_err(|_| InvalidMoney)?;
        let frac: i64 = format!("{frac:0<2}").parse().map_err(|_| InvalidMoney)?;
        let units = whole
            .checked_mul(100)
            .and_then(|w| w.checked_add(frac))
            .ok_or(InvalidMoney)?;
        Ok(Self(if negative { -units } else { units }))
    }

    /// The API form: cents with exactly two decimals.
    pub fn to_cents_string(self) -> String {
        let sign = if self.0 < 0 { "-" } else { "" };
        let abs = self.0.unsigned_abs();
        format!("{sign}{}.{:02}", abs / 100, abs % 100)
    }

    /// Sum, or None on overflow.
    pub fn checked_add(self, other: Self) -> Option<Self> {
        self.0.checked_add(other.0).map(Self)
    }

    /// Difference, or None on overflow.
    pub fn checked_sub(self, other: Self) -> Option<Self> {
        self.0.checked_sub(other.0).map(Self)
    }

    /// This amount times `n` (parts, minutes), or None on overflow.
    pub fn checked_mul(self, n: i64) -> Option<Self> {
        self.0.checked_mul(n).map(Self)
    }

    /// Negated amount.
    pub const fn negate(self) -> Self {
        Self(-self.0)
    }
}

impl fmt::Display for Money {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_cents_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn parses_and_formats_cents() {
        assert_eq!(Money::parse_cents("150000.00").unwrap().units(), 15_000_000);
        assert_eq!(
            Money::parse_cents("12.5").unwrap().to_cents_string(),
            "12.50"
        );
        assert_eq!(Money::parse_cents("7").unwrap().to_cents_string(), "7.00");
        assert_eq!(
            Money::parse_cents("-0.25").unwrap().to_cents_string(),
            "-0.25"
        );
        for bad in [
            "",
            "1.",
            ".5",
            "1.234",
            "abc",
            "1e3",
            "--1",
            "1,00",
            "99999999999999999999",
        ] {
            assert!(Money::parse_cents(bad).is_err(), "{bad}");
        }
    }

    proptest! {
        #[test]
        fn round_trips(units in -1_000_000_000_000i64..1_000_000_000_000) {
            let m = Money::from_units(units);
            prop_assert_eq!(Money::parse_cents(&m.to_cents_string()).unwrap(), m);
        }
    }
}
