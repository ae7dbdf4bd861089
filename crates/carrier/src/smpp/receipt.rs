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

/// The forms a message id may take in a receipt: carriers answer `submit_sm_resp` with one
/// form and write receipts in the other (hexadecimal or decimal). Lowercase, without
/// leading zeros for the numeric forms; the id itself first.
pub fn id_forms(id: &str) -> Vec<String> {
    let id = id.trim().to_ascii_lowercase();
    let mut forms = vec![id.clone()];
    let mut push = |s: String| {
        if !forms.contains(&s) {
            forms.push(s);
        }
    };
    if !id.is_empty() && id.len() <= 16 {
        if let Ok(n) = u64::from_str_radix(&id, 16) {
            push(n.to_string());
            push(format!("{n:x}"));
        }
        if let Ok(n) = id.parse::<u64>() {
            push(format!("{n:x}"));
            push(n.to_string());
        }
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
    }
}
