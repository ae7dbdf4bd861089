//! The earlier interfaces' shapes of numbers: the DID object of events and JSON-RPC.

use dialtone_domain::Timestamp;
use dialtone_store::numbers::Number;
use serde_json::{Value, json};

/// The earlier `hash` of a number: its internal key in base 36, 8 characters, uppercase.
pub(crate) fn did_hash(id: i64) -> String {
    const DIGITS: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ";
    let mut n = id.unsigned_abs();
    let mut out = [b'0'; 8];
    for slot in out.iter_mut().rev() {
        *slot = DIGITS[(n % 36) as usize];
        n /= 36;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Parses a DID hash back to the internal key.
pub(crate) fn did_id(hash: &str) -> Option<i64> {
    (hash.len() == 8)
        .then(|| i64::from_str_radix(&hash.to_ascii_lowercase(), 36).ok())
        .flatten()
}

/// The DID object (`did.assigned`, `did.unassigned`, `did.search`).
pub(crate) fn did(n: &Number) -> Value {
    let local = n.e164.trim_start_matches('+').to_owned();
    json!({
        "hash": did_hash(n.id),
        "intl_number": n.e164,
        "local_number": local,
        "country_code": n.country,
        "type": n.number_type.to_ascii_uppercase(),
        "class": n.class.to_ascii_uppercase(),
        "assigned_at": Timestamp::legacy_or_zero(n.assigned),
        "date_end_contract": Timestamp::legacy_or_zero(n.paid_until),
        "app": n.scenario.as_ref().map(|(sid, name)| json!({"hash": sid.to_hash(), "name": name})),
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn hashes_round_trip() {
        for id in [1, 35, 36, 123_456_789] {
            assert_eq!(super::did_id(&super::did_hash(id)), Some(id));
        }
    }
}
