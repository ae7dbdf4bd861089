//! G.711 (ITU-T G.711): µ-law (PCMU, payload type 0) and A-law (PCMA, payload type 8), the
//! two codecs every SIP trunk speaks. 8 kHz, one byte per sample; small enough to own (the
//! reference algorithm of Sun's public-domain `g711.c`), decoded through a 256-entry table.

/// A G.711 law.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Codec {
    /// µ-law: North America and Japan.
    Pcmu,
    /// A-law: the rest of the world.
    Pcma,
}

impl Codec {
    /// The static RTP payload type (RFC 3551).
    pub fn payload_type(self) -> u8 {
        match self {
            Self::Pcmu => 0,
            Self::Pcma => 8,
        }
    }

    /// The encoding name of `a=rtpmap` (`PCMU`, `PCMA`).
    pub fn name(self) -> &'static str {
        match self {
            Self::Pcmu => "PCMU",
            Self::Pcma => "PCMA",
        }
    }

    /// The codec of an encoding name, case-insensitive (`pcmu`, `PCMA`).
    pub fn from_name(name: &str) -> Option<Self> {
        if name.eq_ignore_ascii_case("PCMU") {
            Some(Self::Pcmu)
        } else if name.eq_ignore_ascii_case("PCMA") {
            Some(Self::Pcma)
        } else {
            None
        }
    }

    /// The codec of a static payload type.
    pub fn from_static(pt: u8) -> Option<Self> {
        match pt {
            0 => Some(Self::Pcmu),
            8 => Some(Self::Pcma),
            _ => None,
        }
    }

    /// Encodes linear samples, one byte each, appended to `out`.
    pub fn encode(self, pcm: &[i16], out: &mut Vec<u8>) {
        out.reserve(pcm.len());
        match self {
            Self::Pcmu => out.extend(pcm.iter().map(|&s| linear_to_ulaw(s))),
            Self::Pcma => out.extend(pcm.iter().map(|&s| linear_to_alaw(s))),
        }
    }

    /// Decodes bytes to linear samples appended to `out`.
    pub fn decode(self, bytes: &[u8], out: &mut Vec<i16>) {
        out.reserve(bytes.len());
        match self {
            Self::Pcmu => out.extend(bytes.iter().map(|&b| ULAW_TO_LINEAR[usize::from(b)])),
            Self::Pcma => out.extend(bytes.iter().map(|&b| ALAW_TO_LINEAR[usize::from(b)])),
        }
    }

    /// The byte of digital silence in this law.
    pub fn silence(self) -> u8 {
        match self {
            Self::Pcmu => 0xFF,
            Self::Pcma => 0xD5,
        }
    }
}

const BIAS: i32 = 0x84;

/// The segment of a magnitude: the first end of `ends` it does not pass (8 past them all).
fn segment(value: i32, ends: &[i32; 8]) -> i32 {
    ends.iter()
        .position(|&e| value <= e)
        .map_or(8, |i| i as i32)
}

/// One linear sample to µ-law (Sun's reference `linear2ulaw`, on 14 bits).
pub fn linear_to_ulaw(sample: i16) -> u8 {
    const ENDS: [i32; 8] = [0x3F, 0x7F, 0xFF, 0x1FF, 0x3FF, 0x7FF, 0xFFF, 0x1FFF];
    let mut v = i32::from(sample) >> 2;
    let mask = if v < 0 {
        v = -v;
        0x7F
    } else {
        0xFF
    };
    v = v.min(8159) + (BIAS >> 2);
    let seg = segment(v, &ENDS);
    if seg >= 8 {
        return (0x7F ^ mask) as u8;
    }
    (((seg << 4) | ((v >> (seg + 1)) & 0x0F)) ^ mask) as u8
}

/// One linear sample to A-law (Sun's reference `linear2alaw`, on 13 bits).
pub fn linear_to_alaw(sample: i16) -> u8 {
    const ENDS: [i32; 8] = [0x1F, 0x3F, 0x7F, 0xFF, 0x1FF, 0x3FF, 0x7FF, 0xFFF];
    let mut v = i32::from(sample) >> 3;
    let mask = if v >= 0 {
        0xD5
    } else {
        v = -v - 1;
        0x55
    };
    let seg = segment(v, &ENDS);
    if seg >= 8 {
        return (0x7F ^ mask) as u8;
    }
    let quant = if seg < 2 {
        (v >> 1) & 0x0F
    } else {
        (v >> seg) & 0x0F
    };
    (((seg << 4) | quant) ^ mask) as u8
}

const fn ulaw_to_linear(byte: u8) -> i16 {
    let u = !byte;
    let t = (((u & 0x0F) as i32) << 3) + BIAS;
    let t = t << ((u & 0x70) >> 4);
    (if u & 0x80 != 0 { BIAS - t } else { t - BIAS }) as i16
}

const fn alaw_to_linear(byte: u8) -> i16 {
    let a = byte ^ 0x55;
    let mut t = ((a & 0x0F) as i32) << 4;
    let seg = ((a & 0x70) >> 4) as i32;
    match seg {
        0 => t += 8,
        1 => t += 0x108,
        _ => {
            t += 0x108;
            t <<= seg - 1;
        }
    }
    (if a & 0x80 != 0 { t } else { -t }) as i16
}

const ULAW_TO_LINEAR: [i16; 256] = {
    let mut t = [0i16; 256];
    let mut i = 0;
    while i < 256 {
        t[i] = ulaw_to_linear(i as u8);
        i += 1;
    }
    t
};

const ALAW_TO_LINEAR: [i16; 256] = {
    let mut t = [0i16; 256];
    let mut i = 0;
    while i < 256 {
        t[i] = alaw_to_linear(i as u8);
        i += 1;
    }
    t
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_values() {
        // Reference points of G.711.
        assert_eq!(linear_to_ulaw(0), 0xFF);
        assert_eq!(linear_to_alaw(0), 0xD5);
        assert_eq!(ULAW_TO_LINEAR[0xFF], 0);
        assert_eq!(ULAW_TO_LINEAR[0x00], -32124);
        assert_eq!(ULAW_TO_LINEAR[0x80], 32124);
        assert_eq!(ALAW_TO_LINEAR[0xD5], 8);
        assert_eq!(ALAW_TO_LINEAR[0x55], -8);
        assert_eq!(ALAW_TO_LINEAR[0xAA], 32256);
        assert_eq!(linear_to_ulaw(i16::MIN), 0x00);
        assert_eq!(linear_to_alaw(i16::MIN), 0x2A);
    }

    #[test]
    fn every_code_round_trips() {
        for b in 0..=255u8 {
            let u = ULAW_TO_LINEAR[usize::from(b)];
            // 0x7F and 0xFF are both zero in µ-law.
            if b != 0x7F {
                assert_eq!(linear_to_ulaw(u), b, "µ-law {b:#x}");
            }
            let a = ALAW_TO_LINEAR[usize::from(b)];
            assert_eq!(linear_to_alaw(a), b, "A-law {b:#x}");
        }
    }

    #[test]
    fn quantization_error_is_small() {
        for s in (-32000i16..32000).step_by(97) {
            for codec in [Codec::Pcmu, Codec::Pcma] {
                let mut bytes = Vec::new();
                codec.encode(&[s], &mut bytes);
                let mut back = Vec::new();
                codec.decode(&bytes, &mut back);
                let err = (i32::from(back[0]) - i32::from(s)).abs();
                // Logarithmic: the step grows with the magnitude, about 1/16 of it.
                let bound = (i32::from(s).abs() / 14).max(16);
                assert!(err <= bound, "{codec:?} {s} -> {}", back[0]);
            }
        }
    }
}
