//! Delivery receipts: the text of SMPP 3.4 appendix B (`id:... stat:DELIVRD err:...`) and
//! the `receipted_message_id` / `message_state` TLVs, mapped to the platform's statuses.

use dialtone_domain::sms::SmsStatus;

/// What a receipt says became of a message part.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Receipt {
    /// The carrier's id of the part, as the receipt writes it.
    pub message_id: String,
    /// The part's new status: remote-queued, delivered, failed or expired.
    pub status: SmsStatus,
    /// The carrier's words (`stat` and `err`), kept as the SMS's error text on failure.
    pub detail: String,
}

/// Maps a receipt `stat` word (or a `message_state` name) to a status: DELIVRD delivered,
/// EXPIRED expired, UNDELIV/REJECTD/DELETED failed, ACCEPTD/ENROUTE/SCHEDULED/UNKNOWN
/// remote-queued (the network still holds it).
pub fn status_of_stat(stat: &str) -> SmsStatus {
    match stat.to_ascii_uppercase().as_str() {
        "DELIVRD" | "DELIVERED" => SmsStatus::Delivered,
        "EXPIRED" => SmsStatus::Expired,
        "UNDELIV" | "UNDELIVERABLE" | "REJECTD" | "REJECTED" | "DELETED" => SmsStatus::Failed,
        _ => SmsStatus::RemoteQueued,
    }
}

/// Maps a `message_state` TLV value (SMPP 3.4 section 5.2.28).
pub fn status_of_state(state: u8) -> SmsStatus {
    match state {
        2 => SmsStatus::Delivered,
        3 => SmsStatus::Expired,
        4 | 5 | 8 => SmsStatus::Failed,
        _ => SmsStatus::RemoteQueued,
    }
}

/// Reads a receipt from the short message text and the TLVs a `deliver_sm` carried; the
/// TLVs win where both are present. None when neither names a message id.
pub fn parse(text: &str, tlv_id: Option<&str>, tlv_state: Option<u8>) -> Option<Receipt> {
    let lower = text.to_ascii_lowercase();
    // `name:` at the start or after a space (so `id:` is not found inside another word).
    let field = |name: &str| -> Option<&str> {
        let key = format!("{name}:");
        let at = lower
            .match_indices(&key)
            .map(|(i, _)| i)
            .find(|&i| i == 0 || lower.as_bytes()[i - 1] == b' ')?;
        let rest = text.get(at + key.len()..)?;
        Some(rest.split_whitespace().next().unwrap_or(""))
    };
    let message_id = tlv_id
        .map(str::to_owned)
        .or_else(|| field("id").map(str::to_owned))
        .filter(|id| !id.is_empty())?;
    let stat = field("stat").unwrap_or("");
    let status = match tlv_state {
        Some(state) => status_of_state(state),
        None => status_of_stat(stat),
    };
    let err = field("err").unwrap_or("");
    let detail = match (stat.is_empty(), err.is_empty()) {
        (false, false) => format!("{stat} err:{err}"),
        (false, true) => stat.to_owned(),
        _ => String::new(),
    };
    Some(Receipt {
        message_id,
        status,
        detail,
    })
}

/// The key a message id is stored and matched under: lowercase, and without leading zeros
/// when it is all hexadecimal digits (`002A010A` is kept as `2a010a`, `000123` as `123`).
/// Carriers pad ids in one place and not the other; the key forgets the padding.
pub fn id_key(id: &str) -> String {
    let id = id.trim().to_ascii_lowercase();
    if !id.is_empty() && id.bytes().all(|b| b.is_ascii_hexdigit()) {
        let stripped = id.trim_start_matches('0');
        return if stripped.is_empty() { "0" } else { stripped }.to_owned();
    }
    id
}

/// The keys ([`id_key`]) a message id matches: its own first, then, for an id that reads
/// as a number, the same number written the other way. Carriers answer `submit_sm_resp`
/// with one form and write receipts in the other: `002A010A` (hexadecimal, padded) and
/// `2752778` (decimal) are the same message. The relation is symmetric: `b`'s key is among
/// `a`'s forms exactly when `a`'s key is among `b`'s.
pub fn id_forms(id: &str) -> Vec<String> {
    let key = id_key(id);
    let mut forms = vec![key.clone()];
    let mut push = |s: String| {
        if !forms.contains(&s) {
            forms.push(s);
        }
    };
    // At most 16 hexadecimal digits (or 19 decimal ones) fit in 64 bits.
    if key.len() <= 16
        && let Ok(n) = u64::from_str_radix(&key, 16)
    {
        push(n.to_string());
    }
    if let Ok(n) = key.parse::<u64>() {
        push(format!("{n:x}"));
    }
    forms
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn appendix_b_text() {
        let r = parse(
            "id:0A1B2C sub:001 dlvrd:001 submit date:2506011200 done date:2506011201 stat:DELIVRD err:000 text:Hello",
            None,
            None,
        )
        .unwrap();
        assert_eq!(r.message_id, "0A1B2C");
        assert_eq!(r.status, SmsStatus::Delivered);
        assert_eq!(r.detail, "DELIVRD err:000");
        let r = parse("id:7 stat:UNDELIV err:011", None, None).unwrap();
        assert_eq!(r.status, SmsStatus::Failed);
        assert_eq!(
            parse("id:7 stat:EXPIRED", None, None).unwrap().status,
            SmsStatus::Expired
        );
        assert_eq!(
            parse("id:7 stat:ENROUTE", None, None).unwrap().status,
            SmsStatus::RemoteQueued
        );
        assert!(parse("hello there", None, None).is_none());
        assert!(parse("msgid:5 stat:DELIVRD", None, None).is_none());
    }

    #[test]
    fn tlvs_win() {
        let r = parse("id:1 stat:ENROUTE", Some("abc"), Some(2)).unwrap();
        assert_eq!(r.message_id, "abc");
        assert_eq!(r.status, SmsStatus::Delivered);
    }

    #[test]
    fn hex_and_decimal_forms() {
        assert_eq!(id_forms("255"), ["255", "597", "ff"]);
        assert!(id_forms("0000FF").contains(&"255".to_owned()));
        assert!(id_forms("ff").contains(&"255".to_owned()));
        assert_eq!(id_forms("msg-1"), ["msg-1"]);
        assert_eq!(id_key("Msg-1"), "msg-1");
        assert_eq!(id_key("0000"), "0");
    }

    /// Padded hexadecimal in the response, decimal in the receipt, and the reverse: each
    /// side's key is among the other's forms.
    #[test]
    fn padded_hex_meets_decimal_both_ways() {
        let matches = |stored: &str, receipt: &str| id_forms(receipt).contains(&id_key(stored));
        assert!(matches("002A010A", "2752778"));
        assert!(matches("2752778", "002A010A"));
        assert!(matches("002a010a", "2A010A"));
        assert!(matches("0001234", "1234"));
        assert!(!matches("002A010A", "2752779"));
    }

    proptest::proptest! {
        #[test]
        fn forms_are_symmetric(a in 0u64..u64::MAX / 2, pad in 0usize..4, hex in proptest::bool::ANY) {
            let written = if hex { format!("{}{a:X}", "0".repeat(pad)) } else { a.to_string() };
            let other = if hex { a.to_string() } else { format!("{}{a:x}", "0".repeat(pad)) };
            proptest::prop_assert!(id_forms(&other).contains(&id_key(&written)));
            proptest::prop_assert!(id_forms(&written).contains(&id_key(&other)));
        }
    }
}
