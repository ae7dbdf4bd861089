//! RFC 4733 telephone-events: DTMF keys carried as RTP packets of their own payload type
//! (`a=rtpmap:101 telephone-event/8000`), received without decoding audio and sent without
//! tones. Four bytes per packet: the event, an end bit and the volume, the duration so far.

/// The keys of a telephone keypad, in the order of their event codes (0-15).
const KEYS: &[u8; 16] = b"0123456789*#ABCD";

/// One telephone-event payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TelephoneEvent {
    /// The event code (0-9, 10 `*`, 11 `#`, 12-15 `A`-`D`).
    pub event: u8,
    /// The last packets of the event carry the end bit.
    pub end: bool,
    /// Power level, in -dBm0 (0-63).
    pub volume: u8,
    /// Duration so far, in timestamp units (1/8000 s).
    pub duration: u16,
}

impl TelephoneEvent {
    /// Reads a payload; None when it is shorter than 4 bytes.
    pub fn parse(payload: &[u8]) -> Option<Self> {
        let [event, flags, d0, d1, ..] = *payload else {
            return None;
        };
        Some(Self {
            event,
            end: flags & 0x80 != 0,
            volume: flags & 0x3F,
            duration: u16::from_be_bytes([d0, d1]),
        })
    }

    /// The 4-byte payload.
    pub fn to_bytes(self) -> [u8; 4] {
        let flags = if self.end { 0x80 } else { 0 } | (self.volume & 0x3F);
        let [d0, d1] = self.duration.to_be_bytes();
        [self.event, flags, d0, d1]
    }

    /// The key of this event, when it is a DTMF key.
    pub fn key(self) -> Option<char> {
        KEYS.get(usize::from(self.event)).map(|&k| char::from(k))
    }
}

/// The event code of a key (`0`-`9`, `*`, `#`, `A`-`D`, lower case too).
pub fn event_of(key: char) -> Option<u8> {
    let k = u8::try_from(key.to_ascii_uppercase()).ok()?;
    KEYS.iter()
        .position(|&c| c == k)
        .and_then(|i| u8::try_from(i).ok())
}

/// Turns received telephone-event packets into keys: each event (one RTP timestamp) is one
/// key, reported by its first packet, whatever number of repeats and end packets follow.
#[derive(Debug, Default)]
pub struct EventReceiver {
    /// The RTP timestamp of the last event reported.
    last: Option<u32>,
}

impl EventReceiver {
    /// Takes one packet's payload and timestamp; the key when it starts a new event.
    pub fn receive(&mut self, timestamp: u32, payload: &[u8]) -> Option<char> {
        let event = TelephoneEvent::parse(payload)?;
        if self.last == Some(timestamp) {
            return None;
        }
        self.last = Some(timestamp);
        event.key()
    }
}

/// The packets that send one key: `frames` updates 20 ms apart (the first with the RTP
/// marker), then the end packet three times, all on one timestamp.
#[derive(Debug, Clone)]
pub struct EventSender {
    event: u8,
    /// Packets sent so far.
    sent: u16,
    /// Updates before the end.
    frames: u16,
}

/// Packets of the end of an event (sent three times, RFC 4733 2.5.1.4).
const END_REPEATS: u16 = 3;

impl EventSender {
    /// A key held for `frames` packets of 20 ms; None when `key` is not a DTMF key.
    pub fn new(key: char, frames: u16) -> Option<Self> {
        Some(Self {
            event: event_of(key)?,
            sent: 0,
            frames: frames.max(1),
        })
    }

    /// The next packet: its payload and whether it carries the marker; None when the
    /// event is over.
    pub fn next_packet(&mut self) -> Option<([u8; 4], bool)> {
        if self.sent >= self.frames + END_REPEATS {
            return None;
        }
        self.sent += 1;
        let end = self.sent > self.frames;
        let duration = self.sent.min(self.frames).saturating_mul(160);
        let payload = TelephoneEvent {
            event: self.event,
            end,
            volume: 10,
            duration,
        }
        .to_bytes();
        Some((payload, self.sent == 1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payloads_round_trip() {
        let e = TelephoneEvent {
            event: 11,
            end: true,
            volume: 10,
            duration: 800,
        };
        assert_eq!(e.to_bytes(), [11, 0x8A, 0x03, 0x20]);
        assert_eq!(TelephoneEvent::parse(&e.to_bytes()), Some(e));
        assert_eq!(e.key(), Some('#'));
        assert_eq!(TelephoneEvent::parse(&[1, 2, 3]), None);
        assert_eq!(event_of('*'), Some(10));
        assert_eq!(event_of('d'), Some(15));
        assert_eq!(event_of('x'), None);
    }

    #[test]
    fn one_key_per_event_whatever_the_repeats() {
        let mut rx = EventReceiver::default();
        let mut keys = String::new();
        for (ts, key) in [(1000u32, '1'), (5000, '1'), (9000, '#')] {
            let mut tx = EventSender::new(key, 5).expect("key");
            while let Some((payload, _)) = tx.next_packet() {
                keys.extend(rx.receive(ts, &payload));
            }
        }
        assert_eq!(keys, "11#");
    }

    #[test]
    fn a_sent_event_ends_three_times() {
        let mut tx = EventSender::new('5', 4).expect("key");
        let packets: Vec<_> = std::iter::from_fn(|| tx.next_packet()).collect();
        assert_eq!(packets.len(), 7);
        assert!(packets[0].1, "marker on the first packet");
        assert!(packets[1..].iter().all(|(_, m)| !m));
        let ends = packets
            .iter()
            .filter(|(p, _)| TelephoneEvent::parse(p).is_some_and(|e| e.end))
            .count();
        assert_eq!(ends, 3);
        assert_eq!(
            TelephoneEvent::parse(&packets[6].0).map(|e| e.duration),
            Some(640)
        );
    }
}
