//! Text spoken on a call is synthesized piece by piece: each plays while the next is being
//! made, so a caller hears the first words of a long prompt as soon as its first piece is
//! ready. The pieces are the sentences, except that the first is cut after a few words: the
//! engines take time in proportion to the audio they make (the neural voice about 50 ms a
//! second), and a first sentence of several seconds would keep the caller waiting. The node
//! keeps how long the first audio took, the last thousand times.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::Duration;

/// Longest first piece, in letters' worth of speech (a digit, read as a word, is worth
/// [`DIGIT`]): a second or so.
const FIRST_PIECE: usize = 24;
/// A digit's worth in letters.
const DIGIT: usize = 5;

/// The pieces `text` is spoken in: its sentences, the first cut after its first few words
/// (at a comma, else a space) when it is longer than [`FIRST_PIECE`].
pub(crate) fn pieces(text: &str) -> Vec<&str> {
    let mut out = sentences(text);
    let Some(&first) = out.first() else {
        return out;
    };
    let mut worth = 0;
    let Some(limit) = first.char_indices().find_map(|(at, c)| {
        worth += if c.is_ascii_digit() { DIGIT } else { 1 };
        (worth > FIRST_PIECE).then_some(at)
    }) else {
        return out;
    };
    let head = &first[..limit];
    let cut = head
        .rfind(", ")
        .map(|at| at + 1)
        .or_else(|| head.rfind(' '));
    if let Some(cut) = cut {
        let (a, b) = (first[..cut].trim(), first[cut..].trim());
        if !a.is_empty() && !b.is_empty() {
            out.splice(0..1, [a, b]);
        }
    }
    out
}

/// The sentences of `text`: cut after `.`, `!`, `?`, `;` or `:` followed by a space, and at
/// line ends; empty pieces dropped. A text without such a mark is one sentence.
pub(crate) fn sentences(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let bytes: Vec<(usize, char)> = text.char_indices().collect();
    for (i, &(at, c)) in bytes.iter().enumerate() {
        let next_is_space = bytes.get(i + 1).is_none_or(|(_, n)| n.is_whitespace());
        let cut = c == '\n' || (matches!(c, '.' | '!' | '?' | ';' | ':') && next_is_space);
        if cut {
            let end = at + c.len_utf8();
            let piece = text[start..end].trim();
            if !piece.is_empty() {
                out.push(piece);
            }
            start = end;
        }
    }
    let rest = text[start..].trim();
    if !rest.is_empty() {
        out.push(rest);
    }
    out
}

/// How long prompts took from the action to their first audio queued on the leg, kept
/// apart for first sentences that had to be synthesized and those that came from the cache.
#[derive(Debug, Default)]
pub(crate) struct FirstAudio {
    synthesized: Window,
    cached: Window,
}

/// The last thousand measures, in milliseconds.
#[derive(Debug, Default)]
struct Window(Mutex<VecDeque<u32>>);

/// A summary of measures, in milliseconds.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FirstAudioSummary {
    /// Prompts measured (the last thousand at most).
    pub count: usize,
    /// Median.
    pub p50_ms: u32,
    /// 99th percentile.
    pub p99_ms: u32,
    /// Longest.
    pub max_ms: u32,
}

/// How soon prompts started, both ways.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct FirstAudioView {
    /// Prompts whose first sentence was synthesized for them.
    pub synthesized: FirstAudioSummary,
    /// Prompts whose first sentence came from the cache.
    pub cached: FirstAudioSummary,
}

impl FirstAudio {
    /// Keeps one measure.
    pub(crate) fn record(&self, took: Duration, cached: bool) {
        let window = if cached {
            &self.cached
        } else {
            &self.synthesized
        };
        window.record(took);
    }

    /// Its summary.
    pub(crate) fn summary(&self) -> FirstAudioView {
        FirstAudioView {
            synthesized: self.synthesized.summary(),
            cached: self.cached.summary(),
        }
    }
}

impl Window {
    fn record(&self, took: Duration) {
        let mut kept = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if kept.len() >= 1000 {
            kept.pop_front();
        }
        kept.push_back(u32::try_from(took.as_millis()).unwrap_or(u32::MAX));
    }

    fn summary(&self) -> FirstAudioSummary {
        let mut all: Vec<u32> = self
            .0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .copied()
            .collect();
        if all.is_empty() {
            return FirstAudioSummary::default();
        }
        all.sort_unstable();
        let at = |q: usize| all[(all.len() - 1) * q / 100];
        FirstAudioSummary {
            count: all.len(),
            p50_ms: at(50),
            p99_ms: at(99),
            max_ms: all[all.len() - 1],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts_are_cut_into_sentences() {
        assert_eq!(
            sentences("Hello. Press 1 for sales! Or 2? Thanks"),
            ["Hello.", "Press 1 for sales!", "Or 2?", "Thanks"]
        );
        assert_eq!(sentences("It costs 1.50 euros."), ["It costs 1.50 euros."]);
        assert_eq!(sentences("line one\nline two"), ["line one", "line two"]);
        assert_eq!(sentences("   "), Vec::<&str>::new());
        assert_eq!(sentences("Déjà vu. Ça va?"), ["Déjà vu.", "Ça va?"]);
    }

    #[test]
    fn the_first_sentence_is_cut_after_a_few_words() {
        assert_eq!(
            pieces("Hello caller +447700901. Thank you for calling."),
            ["Hello caller", "+447700901.", "Thank you for calling."]
        );
        assert_eq!(
            pieces("Welcome, you have reached the sales team of Acme."),
            ["Welcome,", "you have reached the sales team of Acme."]
        );
        assert_eq!(
            pieces("Short one. Then more."),
            ["Short one.", "Then more."]
        );
        assert_eq!(
            pieces("Supercalifragilisticexpialidocious!"),
            ["Supercalifragilisticexpialidocious!"]
        );
        assert_eq!(pieces(""), Vec::<&str>::new());
    }

    #[test]
    fn first_audio_keeps_the_last_thousand() {
        let f = FirstAudio::default();
        for ms in 0..1500u64 {
            f.record(Duration::from_millis(ms), false);
        }
        f.record(Duration::from_millis(3), true);
        let s = f.summary();
        assert_eq!(
            (
                s.synthesized.count,
                s.synthesized.max_ms,
                s.synthesized.p50_ms
            ),
            (1000, 1499, 999)
        );
        assert_eq!((s.cached.count, s.cached.max_ms), (1, 3));
    }
}
