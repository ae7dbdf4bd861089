//! Instants as integer milliseconds since the Unix epoch, and the three textual forms the
//! interfaces use: RFC 3339 with milliseconds (v2.0), `YYYY-MM-DD HH:MM:SS` (earlier
//! interfaces) and the same with milliseconds (status history).

use std::fmt;

use time::format_description::well_known::Rfc3339;
use time::macros::format_description;
use time::{OffsetDateTime, PrimitiveDateTime};

/// Appends `n` as exactly `width` decimal digits (zero-padded; higher digits dropped).
fn push_digits(out: &mut String, n: u32, width: u32) {
    for i in (0..width).rev() {
        out.push(char::from(b'0' + (n / 10u32.pow(i) % 10) as u8));
    }
}

/// An instant, stored as milliseconds since 1970-01-01T00:00:00Z in every database.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(i64);

/// Why a datetime string was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("must be an RFC 3339 datetime such as 2024-04-24T12:00:42.000Z")]
pub struct InvalidDatetime;

impl Timestamp {
    /// The instant `millis` milliseconds after the epoch.
    pub const fn from_millis(millis: i64) -> Self {
        Self(millis)
    }

    /// Milliseconds since the epoch.
    pub const fn millis(self) -> i64 {
        self.0
    }

    /// The system's current time (use a [`crate::Clock`] instead wherever a rule depends on it).
    pub fn now_system() -> Self {
        let now = OffsetDateTime::now_utc();
        Self((now.unix_timestamp_nanos() / 1_000_000) as i64)
    }

    /// This instant plus `millis` milliseconds.
    pub const fn plus_ms(self, millis: i64) -> Self {
        Self(self.0 + millis)
    }

    /// Parses any RFC 3339 datetime (offsets are converted to UTC).
    pub fn parse_rfc3339(text: &str) -> Result<Self, InvalidDatetime> {
        let parsed = OffsetDateTime::parse(text, &Rfc3339).map_err(|_| InvalidDatetime)?;
        Ok(Self((parsed.unix_timestamp_nanos() / 1_000_000) as i64))
    }

    /// Parses the earlier interfaces' `YYYY-MM-DD HH:MM:SS` (UTC).
    pub fn parse_legacy(text: &str) -> Result<Self, InvalidDatetime> {
        let format = format_description!("[year]-[month]-[day] [hour]:[minute]:[second]");
        let parsed = PrimitiveDateTime::parse(text, &format).map_err(|_| InvalidDatetime)?;
        Ok(Self(
            (parsed.assume_utc().unix_timestamp_nanos() / 1_000_000) as i64,
        ))
    }

    fn datetime(self) -> OffsetDateTime {
        OffsetDateTime::from_unix_timestamp_nanos(i128::from(self.0) * 1_000_000)
            .unwrap_or(OffsetDateTime::UNIX_EPOCH)
    }

    /// `YYYY-MM-DDTHH:MM:SS.sssZ`, the only datetime form v2.0 writes.
    pub fn to_rfc3339(self) -> String {
        self.text(b'T', true, "Z")
    }

    /// `YYYY-MM-DD HH:MM:SS`, the earlier interfaces' form.
    pub fn to_legacy(self) -> String {
        self.text(b' ', false, "")
    }

    /// `YYYY-MM-DD HH:MM:SS.sss`, used in the earlier status history.
    pub fn to_legacy_ms(self) -> String {
        self.text(b' ', true, "")
    }

    /// The textual forms, digits written by hand: every event and answer carries several
    /// datetimes, and `format!` with padding cost the SMS worker a tenth of its time.
    fn text(self, between: u8, millis: bool, suffix: &str) -> String {
        let d = self.datetime();
        let year = d.year();
        if !(0..=9999).contains(&year) {
            // Before year 0 (never stored by dialtone itself).
            let ms = if millis {
                format!(".{:03}", d.millisecond())
            } else {
                String::new()
            };
            return format!(
                "{year:04}-{:02}-{:02}{}{:02}:{:02}:{:02}{ms}{suffix}",
                u8::from(d.month()),
                d.day(),
                char::from(between),
                d.hour(),
                d.minute(),
                d.second()
            );
        }
        let mut out = String::with_capacity(24);
        push_digits(&mut out, year as u32, 4);
        out.push('-');
        push_digits(&mut out, u32::from(u8::from(d.month())), 2);
        out.push('-');
        push_digits(&mut out, u32::from(d.day()), 2);
        out.push(char::from(between));
        push_digits(&mut out, u32::from(d.hour()), 2);
        out.push(':');
        push_digits(&mut out, u32::from(d.minute()), 2);
        out.push(':');
        push_digits(&mut out, u32::from(d.second()), 2);
        if millis {
            out.push('.');
            push_digits(&mut out, u32::from(d.millisecond()), 3);
        }
        out.push_str(suffix);
        out
    }

    /// The earlier interfaces' form of an optional instant: `0000-00-00 00:00:00` when absent.
    pub fn legacy_or_zero(at: Option<Self>) -> String {
        at.map_or_else(|| "0000-00-00 00:00:00".to_owned(), Self::to_legacy)
    }

    /// The same time of day `months` calendar months later, the day clamped to the month's
    /// last day (Jan 31 + 1 month is Feb 28 or 29): the contract day of monthly fees.
    pub fn plus_months(self, months: u32) -> Self {
        let d = self.datetime();
        let total =
            i64::from(d.year()) * 12 + i64::from(u8::from(d.month())) - 1 + i64::from(months);
        let (year, month0) = (total.div_euclid(12), total.rem_euclid(12));
        let Ok(year) = i32::try_from(year) else {
            return self;
        };
        let Ok(month) = time::Month::try_from(month0 as u8 + 1) else {
            return self;
        };
        let day = d.day().min(month.length(year));
        match time::Date::from_calendar_date(year, month, day) {
            Ok(date) => {
                let moved = d.replace_date(date);
                Self((moved.unix_timestamp_nanos() / 1_000_000) as i64)
            }
            Err(_) => self,
        }
    }

    /// Whole seconds since the epoch.
    pub const fn unix_seconds(self) -> i64 {
        self.0.div_euclid(1000)
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_rfc3339())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_with_milliseconds_and_z() {
        let t = Timestamp::from_millis(1_713_960_042_007);
        assert_eq!(t.to_rfc3339(), "2024-04-24T12:00:42.007Z");
        assert_eq!(t.to_legacy(), "2024-04-24 12:00:42");
        assert_eq!(t.to_legacy_ms(), "2024-04-24 12:00:42.007");
    }

    #[test]
    fn hand_written_digits_match_the_formatter() {
        let reference = |t: Timestamp| {
            let d = t.datetime();
            format!(
                "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
                d.year(),
                u8::from(d.month()),
                d.day(),
                d.hour(),
                d.minute(),
                d.second(),
                d.millisecond()
            )
        };
        // From 1970 to 9999, in steps that hit every field's edges.
        let mut millis = 0i64;
        while millis < 253_402_300_800_000 {
            let t = Timestamp::from_millis(millis);
            let want = reference(t);
            assert_eq!(t.to_rfc3339(), want);
            assert_eq!(t.to_legacy_ms(), want[..23].replace('T', " "));
            assert_eq!(t.to_legacy(), want[..19].replace('T', " "));
            millis = millis * 3 / 2 + 999_983;
        }
        // Before year 0 (the clock never gives it): the formatter's path.
        let ancient = Timestamp::from_millis(-62_200_000_000_000);
        assert_eq!(ancient.to_rfc3339(), reference(ancient));
        let new_year = Timestamp::parse_rfc3339("2023-12-31T23:59:59.999Z").unwrap();
        assert_eq!(new_year.to_rfc3339(), "2023-12-31T23:59:59.999Z");
        assert_eq!(new_year.plus_ms(1).to_legacy(), "2024-01-01 00:00:00");
    }

    #[test]
    fn parses_any_rfc3339_offset() {
        let a = Timestamp::parse_rfc3339("2024-04-24T14:00:42.5+02:00").unwrap();
        assert_eq!(a.to_rfc3339(), "2024-04-24T12:00:42.500Z");
        assert!(Timestamp::parse_rfc3339("2024-04-24").is_err());
        assert!(Timestamp::parse_rfc3339("yesterday").is_err());
    }

    #[test]
    fn months_clamp_to_the_last_day() {
        let jan31 = Timestamp::parse_rfc3339("2024-01-31T10:00:00Z").unwrap();
        assert_eq!(
            jan31.plus_months(1).to_rfc3339(),
            "2024-02-29T10:00:00.000Z"
        );
        assert_eq!(
            jan31.plus_months(13).to_rfc3339(),
            "2025-02-28T10:00:00.000Z"
        );
        let dec = Timestamp::parse_rfc3339("2024-12-15T00:00:00Z").unwrap();
        assert_eq!(dec.plus_months(1).to_rfc3339(), "2025-01-15T00:00:00.000Z");
    }

    #[test]
    fn legacy_round_trip_and_zero() {
        let t = Timestamp::parse_legacy("2024-01-02 03:04:05").unwrap();
        assert_eq!(t.to_legacy(), "2024-01-02 03:04:05");
        assert_eq!(Timestamp::legacy_or_zero(None), "0000-00-00 00:00:00");
    }
}
