//! In-band DTMF: keys heard as dual tones in the audio itself, for trunks that carry no
//! telephone-events, and the tones made for a leg that cannot take telephone-events.
//!
//! Detection runs the Goertzel filter for the eight DTMF frequencies over 20 ms blocks
//! (160 samples): a key is a block where the strongest row and column tones hold most of the
//! block's energy, clear of the other tones of their group, within the twist ITU-T Q.24
//! allows, held for two blocks in a row (40 ms), and reported once until it stops.

use std::f32::consts::PI;

/// Samples per analysed block (20 ms at 8 kHz).
const BLOCK: usize = 160;
/// Row (low group) frequencies, Hz.
const ROWS: [f32; 4] = [697.0, 770.0, 852.0, 941.0];
/// Column (high group) frequencies, Hz.
const COLS: [f32; 4] = [1209.0, 1336.0, 1477.0, 1633.0];
/// The keys by row, then column.
const KEYS: [[char; 4]; 4] = [
    ['1', '2', '3', 'A'],
    ['4', '5', '6', 'B'],
    ['7', '8', '9', 'C'],
    ['*', '0', '#', 'D'],
];
/// Quietest block analysed: mean square of about -45 dBFS (speech pauses and line noise
/// are never keys).
const MIN_ENERGY: f32 = 1000.0;
/// Share of the block's energy the two tones must hold together.
const MIN_SHARE: f32 = 0.55;
/// How much stronger the chosen tone of a group must be than the others of its group.
const GROUP_MARGIN: f32 = 4.0;
/// Largest ratio between the two tones' powers (about 8 dB either way).
const MAX_TWIST: f32 = 6.3;

/// The Goertzel power of `freq` in `block`, normalized to the share of the block's energy a
/// pure tone of that frequency would give (about 1 for a pure tone).
fn share(block: &[f32], freq: f32, energy: f32) -> f32 {
    let coeff = 2.0 * (2.0 * PI * freq / 8000.0).cos();
    let (mut s1, mut s2) = (0.0f32, 0.0f32);
    for &x in block {
        let s0 = x + coeff * s1 - s2;
        s2 = s1;
        s1 = s0;
    }
    let power = s1 * s1 + s2 * s2 - coeff * s1 * s2;
    // A sine of amplitude a: power (a N / 2)^2, energy N a^2 / 2.
    power * 2.0 / (block.len() as f32 * energy)
}

/// The strongest frequency of a group, if it stands out of the group.
fn strongest(block: &[f32], group: &[f32; 4], energy: f32) -> Option<(usize, f32)> {
    let shares: Vec<f32> = group.iter().map(|&f| share(block, f, energy)).collect();
    let (best, &top) = shares
        .iter()
        .enumerate()
        .max_by(|a, b| a.1.total_cmp(b.1))?;
    let others = shares
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != best)
        .all(|(_, &s)| s * GROUP_MARGIN < top);
    others.then_some((best, top))
}

/// The key a block holds, if any.
fn key_of(block: &[f32]) -> Option<char> {
    let energy: f32 = block.iter().map(|x| x * x).sum();
    if energy / (block.len() as f32) < MIN_ENERGY {
        return None;
    }
    let (row, low) = strongest(block, &ROWS, energy)?;
    let (col, high) = strongest(block, &COLS, energy)?;
    if low + high < MIN_SHARE || low > high * MAX_TWIST || high > low * MAX_TWIST {
        return None;
    }
    Some(KEYS[row][col])
}

/// Finds keys in a stream of 8 kHz samples.
#[derive(Debug, Default)]
pub struct Detector {
    pending: Vec<f32>,
    /// The key of the last block, and whether it was reported.
    last: Option<(char, bool)>,
}

impl Detector {
    /// Takes samples; the keys that became certain with them.
    pub fn push(&mut self, samples: &[i16]) -> Vec<char> {
        let mut keys = Vec::new();
        self.pending.extend(samples.iter().map(|&s| f32::from(s)));
        let mut at = 0;
        while self.pending.len() - at >= BLOCK {
            let key = key_of(&self.pending[at..at + BLOCK]);
            at += BLOCK;
            self.last = match (key, self.last) {
                (Some(k), Some((l, reported))) if k == l => {
                    if !reported {
                        keys.push(k);
                    }
                    Some((k, true))
                }
                (Some(k), _) => Some((k, false)),
                (None, _) => None,
            };
        }
        self.pending.drain(..at);
        keys
    }
}

/// The dual tone of `key` for `ms` milliseconds then as long a silence, at about -10 dBFS
/// per tone; None when `key` is not a DTMF key.
pub fn tone(key: char, ms: u32) -> Option<Vec<i16>> {
    let key = key.to_ascii_uppercase();
    let (row, col) = KEYS
        .iter()
        .enumerate()
        .find_map(|(r, keys)| keys.iter().position(|&k| k == key).map(|c| (r, c)))?;
    let n = usize::try_from(ms).ok()? * 8;
    let (f1, f2) = (ROWS[row], COLS[col]);
    let mut out: Vec<i16> = (0..n)
        .map(|i| {
            let t = i as f32 / 8000.0;
            let v = 0.3 * (2.0 * PI * f1 * t).sin() + 0.3 * (2.0 * PI * f2 * t).sin();
            (v * 32767.0) as i16
        })
        .collect();
    out.resize(n * 2, 0);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn detect(samples: &[i16]) -> String {
        let mut d = Detector::default();
        // In frames of 160, as RTP brings them.
        samples.chunks(160).flat_map(|c| d.push(c)).collect()
    }

    #[test]
    fn every_key_is_found_once() {
        let mut audio = Vec::new();
        for key in "123A456B789C*0#D".chars() {
            audio.extend(tone(key, 80).expect("tone"));
        }
        assert_eq!(detect(&audio), "123A456B789C*0#D");
    }

    #[test]
    fn off_frequency_and_quiet_keys_are_found() {
        // 1.5% off (the tolerance of Q.23), 20 dB quieter, after a G.711 round trip.
        let n = 8 * 100;
        let tone: Vec<i16> = (0..n)
            .map(|i| {
                let t = i as f32 / 8000.0;
                let v = 0.03 * (2.0 * PI * 852.0 * 1.015 * t).sin()
                    + 0.03 * (2.0 * PI * 1477.0 * 0.985 * t).sin();
                (v * 32767.0) as i16
            })
            .collect();
        let mut bytes = Vec::new();
        super::super::g711::Codec::Pcmu.encode(&tone, &mut bytes);
        let mut back = Vec::new();
        super::super::g711::Codec::Pcmu.decode(&bytes, &mut back);
        assert_eq!(detect(&back), "9");
    }

    #[test]
    fn single_tones_chords_and_noise_are_not_keys() {
        let sine = |f: f32| -> Vec<i16> {
            (0..1600)
                .map(|i| ((2.0 * PI * f * i as f32 / 8000.0).sin() * 10000.0) as i16)
                .collect()
        };
        assert_eq!(detect(&sine(1000.0)), "");
        assert_eq!(detect(&sine(697.0)), "");
        // A harmonic-rich tone (a vowel-like buzz at 150 Hz).
        let buzz: Vec<i16> = (0..1600)
            .map(|i| {
                let t = i as f32 / 8000.0;
                let v: f32 = (1..20)
                    .map(|h| (2.0 * PI * 150.0 * h as f32 * t).sin() / h as f32)
                    .sum();
                (v * 5000.0) as i16
            })
            .collect();
        assert_eq!(detect(&buzz), "");
        // Pseudo-random noise.
        let mut x = 12345u32;
        let noise: Vec<i16> = (0..1600)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                (x % 20000) as i16 - 10000
            })
            .collect();
        assert_eq!(detect(&noise), "");
        assert_eq!(detect(&[0; 1600]), "");
    }

    #[test]
    fn a_short_blip_is_not_a_key_and_a_held_key_counts_once() {
        let blip = &tone('5', 20).expect("tone")[..160];
        assert_eq!(detect(blip), "");
        let held: Vec<i16> = tone('7', 500).expect("tone");
        assert_eq!(detect(&held), "7");
    }
}
