//! Reassembly of concatenated inbound SMS: parts wait in memory, keyed by sender, recipient
//! and reference, until the last one arrives.
//!
//! Each part but the one that completes the message is acknowledged on arrival: many SMSCs
//! send the next part only after the previous one's `deliver_sm_resp`, so holding them
//! would stall the message. The completing part's answer waits until the whole SMS is
//! stored. The price: parts held when the process dies are lost with it.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use super::session::Answer;
use super::text::PartOf;

/// Parts kept at most this long; an incomplete message is then dropped (its parts were
/// never acknowledged, so the SMSC still owns them).
const MAX_AGE: Duration = Duration::from_secs(600);

type Key = (String, String, u16, u8);

struct Waiting {
    parts: Vec<Option<String>>,
    since: Instant,
}

/// Parts waiting for their siblings.
#[derive(Default)]
pub(crate) struct Reassembly {
    waiting: HashMap<Key, Waiting>,
}

impl Reassembly {
    /// Adds a part; returns the whole text and this part's answer when it completes the
    /// message (earlier parts are answered here, on arrival).
    pub fn add(
        &mut self,
        from: &str,
        to: &str,
        part: PartOf,
        text: String,
        answer: Answer,
    ) -> Option<(String, Answer)> {
        let PartOf {
            reference,
            total,
            seq,
        } = part;
        let now = Instant::now();
        self.waiting
            .retain(|_, w| now.duration_since(w.since) < MAX_AGE);
        let total_n = usize::from(total.max(1));
        let key = (from.to_owned(), to.to_owned(), reference, total);
        let entry = self.waiting.entry(key.clone()).or_insert_with(|| Waiting {
            parts: vec![None; total_n],
            since: now,
        });
        let index = usize::from(seq.max(1)) - 1;
        if let Some(slot) = entry.parts.get_mut(index) {
            *slot = Some(text);
        }
        if entry.parts.iter().all(Option::is_some) {
            let done = self.waiting.remove(&key)?;
            let text: String = done.parts.into_iter().flatten().collect();
            return Some((text, answer));
        }
        answer.send(rusmpp::CommandStatus::EsmeRok);
        None
    }
}
