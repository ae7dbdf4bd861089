//! The edit list of the sound track of an MP4 file, for gapless AAC.
//!
//! AAC encoders prepend priming samples (1024 or 2112) and pad the last frame; MP4 writers
//! record the audible part in the track's edit list (`moov/trak/edts/elst`). symphonia 0.5
//! ignores edit lists, so the decoder output would be up to ~200 ms too long at low sample
//! rates. This minimal box walker reads the first non-empty edit of the first sound track.

/// The audible part of the sound track, as a fraction of seconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Edit {
    /// Samples to drop at the start, in `media_timescale` units.
    pub media_time: u64,
    /// Audible duration, in `movie_timescale` units.
    pub segment_duration: u64,
    pub media_timescale: u32,
    pub movie_timescale: u32,
}

impl Edit {
    /// `(frames to skip, frames to keep)` at `rate` hertz.
    pub(crate) fn frames_at(&self, rate: u32) -> (usize, usize) {
        let skip =
            self.media_time.saturating_mul(u64::from(rate)) / u64::from(self.media_timescale);
        let keep =
            self.segment_duration.saturating_mul(u64::from(rate)) / u64::from(self.movie_timescale);
        (
            usize::try_from(skip).unwrap_or(usize::MAX),
            usize::try_from(keep).unwrap_or(usize::MAX),
        )
    }
}

/// The children boxes of `data`: `(type, body)`.
fn boxes(mut data: &[u8]) -> impl Iterator<Item = ([u8; 4], &[u8])> {
    std::iter::from_fn(move || {
        let header = data.get(0..8)?;
        let size32 = u32::from_be_bytes(header[0..4].try_into().ok()?) as u64;
        let kind: [u8; 4] = header[4..8].try_into().ok()?;
        let (size, head) = match size32 {
            1 => (u64::from_be_bytes(data.get(8..16)?.try_into().ok()?), 16),
            0 => (data.len() as u64, 8),
            n => (n, 8),
        };
        let size = usize::try_from(size).ok()?;
        if size < head || size > data.len() {
            return None;
        }
        let body = &data[head..size];
        data = &data[size..];
        Some((kind, body))
    })
}

fn child<'a>(data: &'a [u8], kind: &[u8; 4]) -> Option<&'a [u8]> {
    boxes(data).find(|(k, _)| k == kind).map(|(_, body)| body)
}

fn be_u32(data: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(data.get(at..at + 4)?.try_into().ok()?))
}

fn be_u64(data: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_be_bytes(data.get(at..at + 8)?.try_into().ok()?))
}

/// Timescale of an `mvhd` or `mdhd` body (both put it after version, flags and two dates).
fn timescale(full_box: &[u8]) -> Option<u32> {
    let at = if *full_box.first()? == 1 { 20 } else { 12 };
    be_u32(full_box, at).filter(|&t| t > 0)
}

/// The first non-empty edit of the first sound track of the MP4 file `bytes`.
pub(crate) fn sound_edit(bytes: &[u8]) -> Option<Edit> {
    let moov = child(bytes, b"moov")?;
    let movie_timescale = timescale(child(moov, b"mvhd")?)?;
    let trak = boxes(moov)
        .filter(|(k, _)| k == b"trak")
        .map(|(_, b)| b)
        .find(|trak| {
            child(trak, b"mdia")
                .and_then(|mdia| child(mdia, b"hdlr"))
                .and_then(|hdlr| hdlr.get(8..12))
                .is_some_and(|handler| handler == b"soun")
        })?;
    let media_timescale = timescale(child(child(trak, b"mdia")?, b"mdhd")?)?;
    let elst = child(child(trak, b"edts")?, b"elst")?;
    let version = *elst.first()?;
    let count = be_u32(elst, 4)? as usize;
    let entry_len = if version == 1 { 20 } else { 12 };
    (0..count.min(16)).find_map(|i| {
        let at = 8 + i * entry_len;
        let (duration, media_time) = if version == 1 {
            (be_u64(elst, at)?, be_u64(elst, at + 8)? as i64)
        } else {
            (
                u64::from(be_u32(elst, at)?),
                i64::from(be_u32(elst, at + 4)? as i32),
            )
        };
        // media_time -1 is an empty edit (a pause before the media starts).
        (media_time >= 0 && duration > 0).then_some(Edit {
            media_time: media_time as u64,
            segment_duration: duration,
            media_timescale,
            movie_timescale,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bx(kind: &[u8; 4], body: &[u8]) -> Vec<u8> {
        let mut out = ((body.len() + 8) as u32).to_be_bytes().to_vec();
        out.extend_from_slice(kind);
        out.extend_from_slice(body);
        out
    }

    #[test]
    fn reads_the_first_sound_edit() {
        let mut mvhd = vec![0u8; 100];
        mvhd[12..16].copy_from_slice(&1000u32.to_be_bytes());
        let mut mdhd = vec![0u8; 24];
        mdhd[12..16].copy_from_slice(&44_100u32.to_be_bytes());
        let mut hdlr = vec![0u8; 24];
        hdlr[8..12].copy_from_slice(b"soun");
        let mut elst = vec![0, 0, 0, 0, 0, 0, 0, 2];
        elst.extend_from_slice(&100u32.to_be_bytes());
        elst.extend_from_slice(&(-1i32).to_be_bytes());
        elst.extend_from_slice(&[0, 1, 0, 0]);
        elst.extend_from_slice(&300u32.to_be_bytes());
        elst.extend_from_slice(&1024i32.to_be_bytes());
        elst.extend_from_slice(&[0, 1, 0, 0]);
        let mdia = [bx(b"mdhd", &mdhd), bx(b"hdlr", &hdlr)].concat();
        let trak = [bx(b"edts", &bx(b"elst", &elst)), bx(b"mdia", &mdia)].concat();
        let moov = [bx(b"mvhd", &mvhd), bx(b"trak", &trak)].concat();
        let file = [bx(b"ftyp", b"M4A \0\0\0\0"), bx(b"moov", &moov)].concat();
        let edit = sound_edit(&file).expect("edit");
        assert_eq!(edit.frames_at(44_100), (1024, 13_230));
        assert_eq!(sound_edit(&file[..file.len() - 3]), None);
        assert_eq!(sound_edit(b""), None);
    }
}
