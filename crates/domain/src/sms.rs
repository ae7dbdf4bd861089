//! SMS text: GSM 03.38 or UCS-2, and how a text splits into parts.
//!
//! GSM 03.38: characters of the basic table cost one septet, those of the extension table
//! two (an escape and the character). UCS-2: every UTF-16 code unit costs one, so a
//! character outside the BMP costs two (a surrogate pair). One part holds 160 septets or 70
//! units; a longer message is sent as parts of 153 or 67 (the rest carries the concatenation
//! header). A part never splits an escape pair or a surrogate pair.

/// How a text is encoded on the air.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Encoding {
    /// GSM 03.38 7-bit default alphabet (with its extension table).
    Gsm,
    /// UCS-2 (UTF-16 code units).
    Unicode,
}

impl Encoding {
    /// The v2.0 word.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Gsm => "gsm",
            Self::Unicode => "unicode",
        }
    }

    /// The earlier interfaces' word.
    pub fn legacy(self) -> &'static str {
        match self {
            Self::Gsm => "GSM",
            Self::Unicode => "UNICODE",
        }
    }

    /// Parses the v2.0 word or the earlier one.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "gsm" | "GSM" => Some(Self::Gsm),
            "unicode" | "UNICODE" => Some(Self::Unicode),
            _ => None,
        }
    }

    /// Units one part holds when the message fits in one part.
    pub fn single_capacity(self) -> usize {
        match self {
            Self::Gsm => 160,
            Self::Unicode => 70,
        }
    }

    /// Units each part holds in a multi-part message.
    pub fn multi_capacity(self) -> usize {
        match self {
            Self::Gsm => 153,
            Self::Unicode => 67,
        }
    }
}

/// The basic table of GSM 03.38, in code order (0x1B, the escape, is a placeholder).
const BASIC: &str = "@£$¥èéùìòÇ\nØø\rÅåΔ_ΦΓΛΩΠΨΣΘΞ\u{1B}ÆæßÉ !\"#¤%&'()*+,-./0123456789:;<=>?¡ABCDEFGHIJKLMNOPQRSTUVWXYZÄÖÑÜ§¿abcdefghijklmnopqrstuvwxyzäöñüà";

/// The extension table of GSM 03.38 (each costs an escape plus itself).
const EXTENSION: &str = "\u{0C}^{}\\[~]|€";

/// Septets a character costs in GSM 03.38, or None when it has no GSM form.
pub fn gsm_septets(c: char) -> Option<usize> {
    if c == '\u{1B}' {
        return None;
    }
    if BASIC.contains(c) {
        Some(1)
    } else if EXTENSION.contains(c) {
        Some(2)
    } else {
        None
    }
}

/// Whether every character of the text has a GSM 03.38 form.
pub fn is_gsm(text: &str) -> bool {
    text.chars().all(|c| gsm_septets(c).is_some())
}

/// Units a character costs in `encoding` (assumes GSM-representable text for Gsm).
fn cost(c: char, encoding: Encoding) -> usize {
    match encoding {
        Encoding::Gsm => gsm_septets(c).unwrap_or(1),
        Encoding::Unicode => c.len_utf16(),
    }
}

/// Why a text cannot be sent as asked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TextError {
    /// `encoding=gsm` was asked for, but a character has no GSM 03.38 form.
    #[error("the character {0:?} cannot be encoded in GSM 03.38")]
    NotGsm(char),
    /// More parts than a concatenated message can have.
    #[error("the text needs {0} parts; at most {MAX_PARTS} are possible")]
    TooLong(usize),
    /// An empty text.
    #[error("the text is empty")]
    Empty,
}

/// Most parts a concatenated message may have (the concatenation header counts to 255).
pub const MAX_PARTS: usize = 255;

/// How a text will be sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    /// The encoding chosen.
    pub encoding: Encoding,
    /// Units in all (septets or UTF-16 code units).
    pub units: usize,
    /// The parts, as text.
    pub parts: Vec<String>,
}

/// Chooses the encoding (GSM when every character allows it, unless `forced`) and splits the
/// text into parts.
pub fn layout(text: &str, forced: Option<Encoding>) -> Result<Layout, TextError> {
    if text.is_empty() {
        return Err(TextError::Empty);
    }
    let encoding = match forced {
        Some(Encoding::Gsm) => {
            if let Some(c) = text.chars().find(|c| gsm_septets(*c).is_none()) {
                return Err(TextError::NotGsm(c));
            }
            Encoding::Gsm
        }
        Some(Encoding::Unicode) => Encoding::Unicode,
        None if is_gsm(text) => Encoding::Gsm,
        None => Encoding::Unicode,
    };
    let units: usize = text.chars().map(|c| cost(c, encoding)).sum();
    let parts = if units <= encoding.single_capacity() {
        vec![text.to_owned()]
    } else {
        split(text, encoding, encoding.multi_capacity())
    };
    if parts.len() > MAX_PARTS {
        return Err(TextError::TooLong(parts.len()));
    }
    Ok(Layout {
        encoding,
        units,
        parts,
    })
}

/// Splits on character boundaries so no part exceeds `capacity` units; a two-unit character
/// (escape pair, surrogate pair) moves whole to the next part.
fn split(text: &str, encoding: Encoding, capacity: usize) -> Vec<String> {
    let mut parts = Vec::new();
    let mut current = String::new();
    let mut used = 0;
    for c in text.chars() {
        let n = cost(c, encoding);
        if used + n > capacity {
            parts.push(std::mem::take(&mut current));
            used = 0;
        }
        current.push(c);
        used += n;
    }
    if !current.is_empty() {
        parts.push(current);
    }
    parts
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn parts(text: &str) -> (Encoding, usize) {
        let l = layout(text, None).unwrap();
        (l.encoding, l.parts.len())
    }

    #[test]
    fn tables_have_their_sizes() {
        assert_eq!(BASIC.chars().count(), 128);
        assert_eq!(EXTENSION.chars().count(), 10);
    }

    #[test]
    fn boundaries() {
        assert_eq!(parts(&"a".repeat(160)), (Encoding::Gsm, 1));
        assert_eq!(parts(&"a".repeat(161)), (Encoding::Gsm, 2));
        assert_eq!(parts(&"a".repeat(306)), (Encoding::Gsm, 2));
        assert_eq!(parts(&"a".repeat(307)), (Encoding::Gsm, 3));
        assert_eq!(
            parts(&"é".repeat(70)),
            (Encoding::Gsm, 1),
            "é is in the basic table"
        );
        assert_eq!(parts(&"ж".repeat(70)), (Encoding::Unicode, 1));
        assert_eq!(parts(&"ж".repeat(71)), (Encoding::Unicode, 2));
        assert_eq!(parts(&"ж".repeat(134)), (Encoding::Unicode, 2));
        assert_eq!(parts(&"ж".repeat(135)), (Encoding::Unicode, 3));
    }

    #[test]
    fn extension_characters_cost_two_and_never_split() {
        assert_eq!(parts(&"€".repeat(80)), (Encoding::Gsm, 1));
        assert_eq!(parts(&"€".repeat(81)), (Encoding::Gsm, 2));
        // 152 septets then a 2-septet character: it goes whole to the second part.
        let text = format!("{}€{}", "a".repeat(152), "b".repeat(10));
        let l = layout(&text, None).unwrap();
        assert_eq!(l.parts[0], "a".repeat(152));
        assert!(l.parts[1].starts_with('€'));
    }

    #[test]
    fn surrogate_pairs_cost_two_and_never_split() {
        assert_eq!(parts(&"😀".repeat(35)), (Encoding::Unicode, 1));
        assert_eq!(parts(&"😀".repeat(36)), (Encoding::Unicode, 2));
        let text = format!("{}😀", "ж".repeat(66));
        let text = format!("{text}{}", "ж".repeat(10));
        let l = layout(&text, None).unwrap();
        assert_eq!(l.parts[0].chars().count(), 66);
        assert!(l.parts[1].starts_with('😀'));
    }

    #[test]
    fn forced_encodings() {
        assert_eq!(
            layout("hello", Some(Encoding::Unicode)).unwrap().encoding,
            Encoding::Unicode
        );
        assert_eq!(
            layout("hello ж", Some(Encoding::Gsm)),
            Err(TextError::NotGsm('ж'))
        );
        assert_eq!(layout("", None), Err(TextError::Empty));
        assert!(matches!(
            layout(&"a".repeat(153 * 256), None),
            Err(TextError::TooLong(_))
        ));
    }

    proptest! {
        #[test]
        fn parts_rejoin_to_the_text_and_respect_capacity(text in "[a-z€{}😀жé ]{1,700}") {
            let l = layout(&text, None).unwrap();
            prop_assert_eq!(l.parts.concat(), text.clone());
            let capacity = if l.parts.len() == 1 { l.encoding.single_capacity() } else { l.encoding.multi_capacity() };
            for p in &l.parts {
                let used: usize = p.chars().map(|c| cost(c, l.encoding)).sum();
                prop_assert!(used <= capacity);
                prop_assert!(!p.is_empty());
            }
        }
    }
}

/// Where an SMS is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SmsStatus {
    /// Accepted by the platform.
    Created,
    /// Handed to the carrier.
    Pending,
    /// The carrier took it.
    Sent,
    /// Queued by the remote network.
    RemoteQueued,
    /// Delivered to the handset.
    Delivered,
    /// Not accepted (no route, refused at submission).
    Error,
    /// Rejected by the carrier.
    Failed,
    /// Not delivered to the recipient in time.
    Expired,
    /// An inbound SMS, received.
    Received,
}

impl SmsStatus {
    /// Every status.
    pub const ALL: [Self; 9] = [
        Self::Created,
        Self::Pending,
        Self::Sent,
        Self::RemoteQueued,
        Self::Delivered,
        Self::Error,
        Self::Failed,
        Self::Expired,
        Self::Received,
    ];

    /// The v2.0 word.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Created => "created",
            Self::Pending => "pending",
            Self::Sent => "sent",
            Self::RemoteQueued => "remote-queued",
            Self::Delivered => "delivered",
            Self::Error => "error",
            Self::Failed => "failed",
            Self::Expired => "expired",
            Self::Received => "received",
        }
    }

    /// The earlier interfaces' word.
    pub fn legacy(self) -> &'static str {
        match self {
            Self::Created => "CREATED",
            Self::Pending => "PENDING",
            Self::Sent => "SENT",
            Self::RemoteQueued => "REMOTE_QUEUED",
            Self::Delivered => "DELIVERED",
            Self::Error => "ERROR",
            Self::Failed => "FAILED",
            Self::Expired => "EXPIRED",
            Self::Received => "RECEIVED",
        }
    }

    /// Parses the v2.0 word.
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.as_str() == text)
    }

    /// No move leaves this status.
    pub fn is_final(self) -> bool {
        matches!(
            self,
            Self::Delivered | Self::Error | Self::Failed | Self::Expired | Self::Received
        )
    }

    /// Whether the seed's table allows moving from `self` to `next`: one step along
    /// created, pending, sent, remote-queued, delivered; or from any unfinished status to
    /// error, failed or expired.
    pub fn may_become(self, next: Self) -> bool {
        if self.is_final() {
            return false;
        }
        match next {
            Self::Error | Self::Failed | Self::Expired => true,
            Self::Pending => self == Self::Created,
            Self::Sent => self == Self::Pending,
            Self::RemoteQueued => self == Self::Sent,
            Self::Delivered => self == Self::RemoteQueued,
            Self::Created | Self::Received => false,
        }
    }
}

/// Whether an SMS goes out or came in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Direction {
    /// Sent by an account.
    Outbound,
    /// Received on an account's number.
    Inbound,
}

impl Direction {
    /// The v2.0 word.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Outbound => "outbound",
            Self::Inbound => "inbound",
        }
    }

    /// The earlier interfaces' word.
    pub fn legacy(self) -> &'static str {
        match self {
            Self::Outbound => "OUT",
            Self::Inbound => "IN",
        }
    }

    /// Parses the v2.0 word.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "outbound" => Some(Self::Outbound),
            "inbound" => Some(Self::Inbound),
            _ => None,
        }
    }
}

/// Carriers' traffic classes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TrafficType {
    /// Promotional (the default).
    Marketing,
    /// Transactional alerts.
    Alerting,
}

impl TrafficType {
    /// The v2.0 word.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Marketing => "marketing",
            Self::Alerting => "alerting",
        }
    }

    /// Parses the v2.0 or earlier word.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "marketing" | "MARKETING" => Some(Self::Marketing),
            "alerting" | "ALERTING" => Some(Self::Alerting),
            _ => None,
        }
    }
}

/// What an SMS sender may be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sender {
    /// None given: the platform picks one from the destination.
    Auto,
    /// A phone number (must be one of the account's).
    Number(crate::E164),
    /// An alphanumeric sender (approval needed unless it is `SMS`).
    Alphanumeric(String),
}

/// The sender every account may use without approval.
pub const ALWAYS_ALLOWED_SENDER: &str = "SMS";

impl Sender {
    /// Parses a sender: empty, an E.164 number, or 1 to 11 letters, digits, spaces, dashes
    /// or underscores with at least one letter.
    pub fn parse(text: &str) -> Result<Self, &'static str> {
        if text.is_empty() {
            return Ok(Self::Auto);
        }
        if text.starts_with('+') {
            return crate::E164::parse(text)
                .map(Self::Number)
                .map_err(|_| "must be a valid E.164 number");
        }
        let ok = text.chars().count() <= 11
            && text
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == ' ' || c == '-' || c == '_')
            && text.chars().any(|c| c.is_ascii_alphabetic());
        if ok {
            Ok(Self::Alphanumeric(text.to_owned()))
        } else {
            Err(
                "must be empty, an E.164 number, or 1 to 11 letters, digits, spaces, dashes or underscores with at least one letter",
            )
        }
    }
}

#[cfg(test)]
mod status_tests {
    use super::*;

    #[test]
    fn moves_follow_the_seed_table() {
        use SmsStatus::*;
        assert!(Created.may_become(Pending));
        assert!(Pending.may_become(Sent));
        assert!(Sent.may_become(RemoteQueued));
        assert!(RemoteQueued.may_become(Delivered));
        assert!(!Created.may_become(Sent));
        assert!(!Delivered.may_become(Failed));
        for s in [Created, Pending, Sent, RemoteQueued] {
            assert!(s.may_become(Error) && s.may_become(Failed) && s.may_become(Expired));
        }
        assert_eq!(SmsStatus::parse("remote-queued"), Some(RemoteQueued));
        assert_eq!(RemoteQueued.legacy(), "REMOTE_QUEUED");
    }

    #[test]
    fn senders() {
        assert_eq!(Sender::parse(""), Ok(Sender::Auto));
        assert_eq!(Sender::parse("SMS"), Ok(Sender::Alphanumeric("SMS".into())));
        assert!(matches!(
            Sender::parse("+447700900123"),
            Ok(Sender::Number(_))
        ));
        assert!(Sender::parse("My_Shop-1").is_ok());
        for bad in ["123456", "TwelveChars1", "bad!", "+12", "é"] {
            assert!(Sender::parse(bad).is_err(), "{bad}");
        }
    }
}
