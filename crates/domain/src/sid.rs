//! Resource identifiers: 8 characters of `[0-9a-z]`, random, unique per resource kind.
//! The earlier interfaces show the same value uppercased as `hash`.

use std::fmt;

use rand::Rng;

const ALPHABET: &[u8; 36] = b"0123456789abcdefghijklmnopqrstuvwxyz";

/// Length of every sid.
pub const SID_LEN: usize = 8;

/// A resource identifier. Collisions are handled by the store, which retries with a new one.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Sid(String);

impl Sid {
    /// A fresh random sid (36^8, about 2.8e12 values).
    pub fn generate() -> Self {
        let mut rng = rand::rng();
        let s: String = (0..SID_LEN)
            .map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())] as char)
            .collect();
        Self(s)
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
    fn parse_accepts_hash_form_and_rejects_garbage() {
        assert_eq!(Sid::parse("ABCDEF12").unwrap().as_str(), "abcdef12");
        assert!(Sid::parse("abcdef1").is_none());
        assert!(Sid::parse("abcdef1_").is_none());
        assert!(Sid::parse("abcdef123").is_none());
    }
}
