//! The rate table as operators load it: the built-in defaults and CSV files
//! (label,country,type,prefix,smsPrice,callPricePerMinute,numberMonthlyPrice; prices in
//! cents with up to two decimals).

use dialtone_domain::Money;
use dialtone_store::rates::{self, Rate};
use dialtone_store::{DbError, Store};

use crate::numbers::inventory::LineError;

/// The rates every embedded server starts with (a catch-all `+` prices every destination).
pub(crate) const DEFAULT_RATES: &str = include_str!("default_rates.csv");

/// The CSV header of rate files.
pub(crate) const HEADER: &str =
    "label,country,type,prefix,smsPrice,callPricePerMinute,numberMonthlyPrice";

fn parse_line(line: &str) -> Result<Rate, String> {
    let f: Vec<&str> = line.split(',').map(str::trim).collect();
    let [label, country, ty, prefix, sms, call, monthly] = f.as_slice() else {
        return Err(format!("expected 7 fields ({HEADER}), found {}", f.len()));
    };
    if label.is_empty() || label.len() > 64 {
        return Err("label must be 1 to 64 characters".into());
    }
    if country.len() != 2 || !country.bytes().all(|b| b.is_ascii_uppercase()) {
        return Err(format!(
            "country {country:?} must be an ISO 3166 code (ZZ for any)"
        ));
    }
    let digits_ok = prefix
        .strip_prefix('+')
        .is_some_and(|d| d.len() <= 15 && d.bytes().all(|b| b.is_ascii_digit()));
    if !digits_ok {
        return Err(format!("prefix {prefix:?} must be + and up to 15 digits"));
    }
    let price = |name: &str, v: &str| -> Result<Money, String> {
        match Money::parse_cents(v) {
            Ok(m) if m >= Money::ZERO => Ok(m),
            _ => Err(format!(
                "{name} {v:?} must be a non-negative amount in cents"
            )),
        }
    };
    Ok(Rate {
        prefix: (*prefix).to_owned(),
        label: (*label).to_owned(),
        country: (*country).to_owned(),
        number_type: (*ty).to_owned(),
        sms_price: price("smsPrice", sms)?,
        call_price_per_minute: price("callPricePerMinute", call)?,
        number_monthly_price: price("numberMonthlyPrice", monthly)?,
    })
}

/// Parses a rates CSV (header optional); every line is checked before anything is stored.
pub fn parse(csv: &str) -> Result<Vec<Rate>, Vec<LineError>> {
    let mut out = Vec::new();
    let mut errors = Vec::new();
    for (i, line) in csv.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') || (i == 0 && line.eq_ignore_ascii_case(HEADER))
        {
            continue;
        }
        match parse_line(line) {
            Ok(r) => out.push(r),
            Err(message) => errors.push(LineError {
                line: i + 1,
                message,
            }),
        }
    }
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(errors)
    }
}

/// Stores rates (replacing those of the same prefixes) in one transaction.
pub async fn import(store: &Store, list: Vec<Rate>) -> Result<usize, DbError> {
    store
        .write(move |c| {
            rates::import(c, &list)?;
            Ok(list.len())
        })
        .await
}

/// Loads the default rates when the table is empty (first start).
pub(crate) async fn load_default_if_empty(store: &Store) -> anyhow::Result<()> {
    if !store.read(rates::is_empty).await? {
        return Ok(());
    }
    let list = parse(DEFAULT_RATES).map_err(|e| anyhow::anyhow!("default rates: {e:?}"))?;
    import(store, list).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_rates_parse() {
        let list = parse(DEFAULT_RATES).unwrap();
        assert!(list.iter().any(|r| r.prefix == "+"), "a catch-all exists");
    }

    #[test]
    fn bad_lines_are_named() {
        let e = parse("X,FR,mobile,+336,1,1\nY,FR,mobile,336,1,1,1\nZ,FR,mobile,+336,-1,1,1")
            .unwrap_err();
        assert_eq!(e.iter().map(|e| e.line).collect::<Vec<_>>(), [1, 2, 3]);
    }
}
