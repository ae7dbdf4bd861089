//! Phone numbers as inventory: types, classes, store prefixes and areas, and the CSV rows
//! operators load ranges from.

use crate::{E164, Money};

/// What kind of line a number is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum NumberType {
    /// Tied to a place.
    Geographic,
    /// A mobile number.
    Mobile,
    /// Free for the caller.
    Tollfree,
    /// Non-geographic national number.
    National,
    /// Shared cost.
    SharedCost,
    /// Premium rate / shared revenue.
    SharedRevenue,
    /// Personal numbering.
    Personal,
}

impl NumberType {
    /// Every type, in display order.
    pub const ALL: [Self; 7] = [
        Self::Geographic,
        Self::Mobile,
        Self::Tollfree,
        Self::National,
        Self::SharedCost,
        Self::SharedRevenue,
        Self::Personal,
    ];

    /// The v2.0 form.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Geographic => "geographic",
            Self::Mobile => "mobile",
            Self::Tollfree => "tollfree",
            Self::National => "national",
            Self::SharedCost => "sharedcost",
            Self::SharedRevenue => "sharedrevenue",
            Self::Personal => "personal",
        }
    }

    /// Parses the v2.0 form.
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.as_str() == text)
    }
}

/// How desirable a number is (gold numbers are easy to remember).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum NumberClass {
    /// The default.
    Classic,
    /// Memorable numbers, priced higher.
    Gold,
}

impl NumberClass {
    /// Every class.
    pub const ALL: [Self; 2] = [Self::Classic, Self::Gold];

    /// The v2.0 form.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Classic => "classic",
            Self::Gold => "gold",
        }
    }

    /// Parses the v2.0 form.
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.as_str() == text)
    }
}

/// A store prefix: `+` then 1 to 9 digits, the first not 0 (`^\+[1-9][0-9]{0,8}$`).
pub fn is_store_prefix(text: &str) -> bool {
    text.strip_prefix('+').is_some_and(|d| {
        (1..=9).contains(&d.len()) && d.bytes().all(|b| b.is_ascii_digit()) && !d.starts_with('0')
    })
}

/// A store area: at most 32 letters, digits, spaces, apostrophes or hyphens.
pub fn is_store_area(text: &str) -> bool {
    text.chars().count() <= 32
        && text
            .chars()
            .all(|c| c.is_alphanumeric() || c == ' ' || c == '\'' || c == '-')
}

/// The `contains` filter of `GET /numbers`: `^(\+[1-9])?[0-9]{1,32}$`.
pub fn is_number_pattern(text: &str) -> bool {
    let digits = match text.strip_prefix('+') {
        Some(rest) => {
            if !rest.starts_with(|c: char| ('1'..='9').contains(&c)) {
                return false;
            }
            &rest[1..]
        }
        None => text,
    };
    let len_ok = if text.starts_with('+') {
        digits.len() <= 32
    } else {
        (1..=32).contains(&digits.len())
    };
    len_ok && digits.bytes().all(|b| b.is_ascii_digit())
}

/// One line of an inventory file: a range of numbers and their prices.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InventoryRange {
    /// ISO 3166 alpha-2 country.
    pub country: String,
    /// Line type.
    pub number_type: NumberType,
    /// Class.
    pub class: NumberClass,
    /// Store prefix the numbers are offered under.
    pub prefix: String,
    /// Area name (may be empty).
    pub area: String,
    /// First number of the range.
    pub first: E164,
    /// Last number of the range (same length as `first`).
    pub last: E164,
    /// One-off price at purchase.
    pub setup_price: Money,
    /// Price per month.
    pub monthly_price: Money,
}

/// Largest range one line may hold.
pub const MAX_RANGE: u64 = 1_000_000;

/// The CSV header of inventory files.
pub const INVENTORY_HEADER: &str =
    "country,type,class,prefix,area,first,last,setupPrice,monthlyPrice";

impl InventoryRange {
    /// Parses one CSV line (fields split on commas; no quoting is needed by the format).
    pub fn parse_csv(line: &str) -> Result<Self, String> {
        let f: Vec<&str> = line.split(',').map(str::trim).collect();
        let [
            country,
            ty,
            class,
            prefix,
            area,
            first,
            last,
            setup,
            monthly,
        ] = f.as_slice()
        else {
            return Err(format!(
                "expected 9 fields ({INVENTORY_HEADER}), found {}",
                f.len()
            ));
        };
        if country.len() != 2 || !country.bytes().all(|b| b.is_ascii_uppercase()) {
            return Err(format!(
                "country {country:?} must be an ISO 3166 code such as GB"
            ));
        }
        let number_type = NumberType::parse(ty).ok_or_else(|| format!("unknown type {ty:?}"))?;
        let class = NumberClass::parse(class).ok_or_else(|| format!("unknown class {class:?}"))?;
        if !is_store_prefix(prefix) {
            return Err(format!(
                "prefix {prefix:?} must match ^\\+[1-9][0-9]{{0,8}}$"
            ));
        }
        if !is_store_area(area) {
            return Err(format!(
                "area {area:?}: at most 32 letters, digits, spaces, ' or -"
            ));
        }
        let first = E164::parse_format(first).map_err(|e| format!("first: {e}"))?;
        let last = E164::parse_format(last).map_err(|e| format!("last: {e}"))?;
        if first.as_str().len() != last.as_str().len() || first > last {
            return Err("first and last must have the same length, first <= last".into());
        }
        if !first.as_str().starts_with(prefix) || !last.as_str().starts_with(prefix) {
            return Err(format!("the range must start with its prefix {prefix}"));
        }
        let range = Self {
            country: (*country).to_owned(),
            number_type,
            class,
            prefix: (*prefix).to_owned(),
            area: (*area).to_owned(),
            first,
            last,
            setup_price: Money::parse_cents(setup).map_err(|e| format!("setupPrice: {e}"))?,
            monthly_price: Money::parse_cents(monthly).map_err(|e| format!("monthlyPrice: {e}"))?,
        };
        if range.len() > MAX_RANGE {
            return Err(format!("a range holds at most {MAX_RANGE} numbers"));
        }
        if range.setup_price < Money::ZERO || range.monthly_price < Money::ZERO {
            return Err("prices cannot be negative".into());
        }
        Ok(range)
    }

    fn bounds(&self) -> (u64, u64) {
        let n = |e: &E164| e.digits().parse::<u64>().unwrap_or(0);
        (n(&self.first), n(&self.last))
    }

    /// How many numbers the range holds.
    pub fn len(&self) -> u64 {
        let (a, b) = self.bounds();
        b - a + 1
    }

    /// Always false: a range holds at least its first number.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Every number of the range, in order, as E.164 text.
    pub fn numbers(&self) -> impl Iterator<Item = String> + '_ {
        let (a, b) = self.bounds();
        let width = self.first.digits().len();
        (a..=b).map(move |n| format!("+{n:0width$}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn store_patterns() {
        for ok in ["+1", "+44", "+447700", "+123456789"] {
            assert!(is_store_prefix(ok), "{ok}");
        }
        for bad in ["+", "44", "+0", "+1234567890", "+44a"] {
            assert!(!is_store_prefix(bad), "{bad}");
        }
        assert!(is_store_area("Saint-Denis l'Ile 2"));
        assert!(!is_store_area("Paris;DROP"));
        assert!(!is_store_area(&"a".repeat(33)));
        for ok in ["7700", "+44", "+447700900", "0"] {
            assert!(is_number_pattern(ok), "{ok}");
        }
        for bad in ["", "+", "+0", "12a", &"1".repeat(33)] {
            assert!(!is_number_pattern(bad), "{bad}");
        }
    }

    #[test]
    fn parses_ranges() {
        let r = InventoryRange::parse_csv(
            "GB,mobile,classic,+447700,London,+447700900000,+447700900999,100.00,200.00",
        )
        .unwrap();
        assert_eq!(r.len(), 1000);
        assert_eq!(r.numbers().next().unwrap(), "+447700900000");
        assert_eq!(r.numbers().last().unwrap(), "+447700900999");
        assert_eq!(r.setup_price, Money::from_cents(100));
        for bad in [
            "GB,mobile,classic,+447700,London,+447700900999,+447700900000,1,1",
            "GB,mobile,classic,+4477,London,+337700900000,+337700900999,1,1",
            "GB,landline,classic,+447700,London,+447700900000,+447700900999,1,1",
            "gb,mobile,classic,+447700,London,+447700900000,+447700900999,1,1",
            "GB,mobile,classic,+447700,London,+447700900000,+447700900999,1",
            "GB,mobile,classic,+447700,London,+447700900000,+447700900999,-1,1",
        ] {
            assert!(InventoryRange::parse_csv(bad).is_err(), "{bad}");
        }
    }
}
