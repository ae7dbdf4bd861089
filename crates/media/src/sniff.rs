//! Content sniffing: which audio format the first bytes of a file announce.

use crate::DeclaredType;

/// The audio format announced by the magic bytes of `bytes`, if it is one of the supported
/// upload formats.
///
/// Recognises `fLaC` (FLAC, also after an ID3v2 tag), `RIFF....WAVE` (WAV), `OggS` (Ogg),
/// `....ftyp` (MP4/M4A) and MPEG audio Layer III (an ID3v2 tag, or a frame sync with the
/// layer bits of Layer III). ADTS AAC (layer bits zero) is not MPEG Layer III and is refused.
pub fn sniff(bytes: &[u8]) -> Option<DeclaredType> {
    if bytes.starts_with(b"fLaC") {
        return Some(DeclaredType::Flac);
    }
    if bytes.len() >= 12 && &bytes[0..4] == b"RIFF" && &bytes[8..12] == b"WAVE" {
        return Some(DeclaredType::Wav);
    }
    if bytes.starts_with(b"OggS") {
        return Some(DeclaredType::Ogg);
    }
    if bytes.len() >= 12 && &bytes[4..8] == b"ftyp" {
        return Some(DeclaredType::Mp4);
    }
    if bytes.starts_with(b"ID3") {
        // ID3v2: 10-byte header whose last four bytes are a syncsafe size.
        let after = id3v2_len(bytes)
            .and_then(|len| bytes.get(len..))
            .unwrap_or(&[]);
        if after.starts_with(b"fLaC") {
            return Some(DeclaredType::Flac);
        }
        return Some(DeclaredType::Mpeg);
    }
    if is_mp3_frame_sync(bytes) {
        return Some(DeclaredType::Mpeg);
    }
    None
}

/// Total length of the ID3v2 tag at the start of `bytes` (header included).
fn id3v2_len(bytes: &[u8]) -> Option<usize> {
    let header = bytes.get(0..10)?;
    let size = header[6..10].iter().try_fold(0usize, |acc, &b| {
        if b & 0x80 != 0 {
            None
        } else {
            Some((acc << 7) | usize::from(b))
        }
    })?;
    let footer = if header[5] & 0x10 != 0 { 10 } else { 0 };
    Some(10 + size + footer)
}

/// An MPEG audio frame header of Layer III: 11 sync bits, a valid version, layer bits `01`,
/// a bitrate index that is neither free nor bad, and a valid sample-rate index.
fn is_mp3_frame_sync(bytes: &[u8]) -> bool {
    let [a, b, c, ..] = bytes else { return false };
    let version = (b >> 3) & 0b11;
    let layer = (b >> 1) & 0b11;
    let bitrate = c >> 4;
    let rate = (c >> 2) & 0b11;
    *a == 0xFF
        && b & 0xE0 == 0xE0
        && version != 0b01
        && layer == 0b01
        && bitrate != 0
        && bitrate != 0xF
        && rate != 0b11
}

/// A short description of well-known non-audio content, for error messages.
pub(crate) fn describe_other(bytes: &[u8]) -> Option<&'static str> {
    const KNOWN: [(&[u8], &str); 8] = [
        (b"\x89PNG\r\n\x1a\n", "a PNG image"),
        (b"\xFF\xD8\xFF", "a JPEG image"),
        (b"GIF8", "a GIF image"),
        (b"%PDF", "a PDF document"),
        (b"PK\x03\x04", "a ZIP archive"),
        (b"\x1f\x8b", "a gzip archive"),
        (b"\x7fELF", "an executable"),
        (b"<", "text or markup"),
    ];
    if bytes.is_empty() {
        return Some("empty");
    }
    KNOWN
        .iter()
        .find(|(magic, _)| bytes.starts_with(magic))
        .map(|(_, what)| *what)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_magic_bytes() {
        assert_eq!(sniff(b"fLaC\0\0\0\x22"), Some(DeclaredType::Flac));
        assert_eq!(sniff(b"RIFF\x24\0\0\0WAVEfmt "), Some(DeclaredType::Wav));
        assert_eq!(sniff(b"OggS\0\x02\0\0"), Some(DeclaredType::Ogg));
        assert_eq!(
            sniff(b"\0\0\0\x20ftypM4A \0\0\0\0"),
            Some(DeclaredType::Mp4)
        );
        assert_eq!(
            sniff(b"ID3\x04\0\0\0\0\0\0\xFF\xFB\x90\x64"),
            Some(DeclaredType::Mpeg)
        );
        assert_eq!(sniff(b"ID3\x04\0\0\0\0\0\0fLaC"), Some(DeclaredType::Flac));
        assert_eq!(sniff(&[0xFF, 0xFB, 0x90, 0x64]), Some(DeclaredType::Mpeg));
        // ADTS AAC (layer 00) is not MP3.
        assert_eq!(sniff(&[0xFF, 0xF1, 0x50, 0x80]), None);
        assert_eq!(sniff(b"\x89PNG\r\n\x1a\n\0\0"), None);
        assert_eq!(sniff(b""), None);
        assert_eq!(sniff(b"ID3"), Some(DeclaredType::Mpeg));
    }

    #[test]
    fn describes_common_non_audio() {
        assert_eq!(describe_other(b"\x89PNG\r\n\x1a\n"), Some("a PNG image"));
        assert_eq!(describe_other(b""), Some("empty"));
        assert_eq!(describe_other(b"hello"), None);
    }
}
