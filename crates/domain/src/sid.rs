//! Resource identifiers: 8 characters of `[0-9a-z]`, unique per resource kind. The earlier
//! interfaces show the same value uppercased as `hash`.
//!
//! A sid is 3 characters of the clock (10 ms ticks, wrapping every 7.8 minutes) then 5
//! random ones. Sids made together sort together, so a burst of inserts lands on a few pages
//! of the unique index on sids instead of one random page each, which every commit would
//! write again (measured on SMS: with the other index of random keys, about 17 KB written
//! per SMS). Over time the clock part spreads sids as evenly as random ones, so collisions,
//! which the store retries, are as rare.

use std::fmt;

use rand::Rng;

const ALPHABET: &[u8; 36] = b"0123456789abcdefghijklmnopqrstuvwxyz";

/// Length of every sid.
pub const SID_LEN: usize = 8;

/// Leading characters of a sid taken from the clock.
const CLOCK_CHARS: usize = 3;

/// Milliseconds per step of the clock part.
const CLOCK_TICK_MS: u128 = 10;

/// A resource identifier. Collisions are handled by the store, which retries with a new one.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Sid(String);

impl Sid {
    /// A fresh sid: the clock's part, then 5 random characters (about 6e7 values per tick).
    pub fn generate() -> Self {
        let millis = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis());
        Self::at(millis)
    }

    fn at(unix_millis: u128) -> Self {
        let radix = ALPHABET.len() as u128;
        let mut tick = unix_millis / CLOCK_TICK_MS % radix.pow(CLOCK_CHARS as u32);
        let mut s = [b'0'; SID_LEN];
        for c in s[..CLOCK_CHARS].iter_mut().rev() {
            *c = ALPHABET[(tick % radix) as usize];
            tick /= radix;
        }
        let mut rng = rand::rng();
        for c in &mut s[CLOCK_CHARS..] {
            *c = ALPHABET[rng.random_range(0..ALPHABET.len())];
        }
        Self(s.iter().map(|&b| b as char).collect())
    }

    /// Accepts a sid in either case (the earlier interfaces uppercase it).
    pub fn parse(text: &str) -> Option<Self> {
        let lower = text.to_ascii_lowercase();
        (lower.len() == SID_LEN && lower.bytes().all(|b| ALPHABET.contains(&b)))
            .then_some(Self(lower))
    }

    /// The sid as stored and as shown by v2.0.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The earlier interfaces' `hash`: the same value uppercased.
    pub fn to_hash(&self) -> String {
        self.0.to_ascii_uppercase()
    }

    /// Wraps a value read back from the store, which only ever holds valid sids.
    pub fn from_stored(text: String) -> Self {
        Self(text)
    }
}

impl fmt::Display for Sid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_sids_are_valid() {
        for _ in 0..1000 {
            let sid = Sid::generate();
            assert_eq!(Sid::parse(sid.as_str()), Some(sid.clone()));
        }
    }

    #[test]
    fn sids_of_one_tick_share_their_start_and_later_ticks_sort_after() {
        let t = 1_790_000_000_000; // a tick boundary: divisible by 10 ms
        let (a, b) = (Sid::at(t), Sid::at(t + 9));
        assert_eq!(a.as_str()[..CLOCK_CHARS], b.as_str()[..CLOCK_CHARS]);
        assert_ne!(a, b, "the random part differs");
        let later = Sid::at(t + 10);
        assert!(
            later.as_str()[..CLOCK_CHARS] > a.as_str()[..CLOCK_CHARS],
            "{a} then {later}"
        );
        // The clock part wraps after 36^3 ticks.
        assert_eq!(
            Sid::at(t + 10 * 36u128.pow(3)).as_str()[..CLOCK_CHARS],
            a.as_str()[..CLOCK_CHARS]
        );
    }

    #[test]
    fn parse_accepts_hash_form_and_rejects_garbage() {
        assert_eq!(Sid::parse("ABCDEF12").unwrap().as_str(), "abcdef12");
        assert!(Sid::parse("abcdef1").is_none());
        assert!(Sid::parse("abcdef1_").is_none());
        assert!(Sid::parse("abcdef123").is_none());
    }
}
