//! Demultiplexing and decoding to mono `f32` samples at the source rate.

use std::io::{Cursor, ErrorKind};

use symphonia::core::audio::SampleBuffer;
use symphonia::core::codecs::{CODEC_TYPE_NULL, CODEC_TYPE_OPUS, CodecParameters, DecoderOptions};
use symphonia::core::errors::Error as SymError;
use symphonia::core::formats::{FormatOptions, FormatReader, Packet};
use symphonia::core::io::MediaSourceStream;
use symphonia::core::meta::MetadataOptions;
use symphonia::core::probe::Hint;

use crate::ConvertError;
use crate::resample::Resampling;

/// Consecutive undecodable packets after which a stream is given up.
const MAX_BAD_PACKETS: usize = 32;

/// The sample rates a source may have: from 1 kHz to 384 kHz (the highest studio rate).
/// Anything else is refused before any buffer or resampler is sized from it (a header may
/// claim 2^31 Hz).
pub(crate) const SOURCE_RATES: std::ops::RangeInclusive<u32> = 1_000..=384_000;

/// Most channels a source may have (WAV allows 65,535 in its header).
pub(crate) const MAX_CHANNELS: usize = 32;

/// Source audio decoded beyond the duration limit before the conversion stops, whatever an
/// edit list says to drop: room for encoder priming and padding, not for hours of audio
/// hidden in front of the audible part.
const DECODE_SLACK_MS: u64 = 2_000;

/// Refuses a rate outside [`SOURCE_RATES`] or a channel count over [`MAX_CHANNELS`].
fn check_shape(rate: u32, channels: usize) -> Result<(), ConvertError> {
    if !SOURCE_RATES.contains(&rate) {
        return Err(undecodable(format!(
            "unsupported sample rate {rate} Hz (accepted: {} to {} Hz)",
            SOURCE_RATES.start(),
            SOURCE_RATES.end()
        )));
    }
    if channels == 0 || channels > MAX_CHANNELS {
        return Err(undecodable(format!(
            "unsupported channel count {channels} (accepted: 1 to {MAX_CHANNELS})"
        )));
    }
    Ok(())
}

fn undecodable(what: impl std::fmt::Display) -> ConvertError {
    ConvertError::Undecodable(what.to_string())
}

/// Decodes the first audio track of `bytes`, downmixed to mono and resampled to
/// [`crate::TARGET_RATE`] as it is decoded (memory follows the 8 kHz output, not the source).
/// Stops with [`ConvertError::TooLong`] as soon as the audio exceeds `max_duration_ms`.
pub(crate) fn decode(bytes: &[u8], max_duration_ms: u64) -> Result<Vec<f32>, ConvertError> {
    let source = MediaSourceStream::new(Box::new(Cursor::new(bytes.to_vec())), Default::default());
    let format_options = FormatOptions {
        enable_gapless: true,
        ..Default::default()
    };
    let probed = symphonia::default::get_probe()
        .format(
            &Hint::new(),
            source,
            &format_options,
            &MetadataOptions::default(),
        )
        .map_err(|e| undecodable(format!("unreadable container ({e})")))?;
    let mut format = probed.format;
    let track = format
        .tracks()
        .iter()
        .find(|t| t.codec_params.codec != CODEC_TYPE_NULL)
        .ok_or_else(|| undecodable("no audio track"))?;
    let track_id = track.id;
    let params = track.codec_params.clone();
    // What the header claims is checked before a decoder sizes anything from it.
    if let Some(rate) = params.sample_rate {
        let channels = params.channels.map_or(1, |c| c.count());
        check_shape(rate, channels)?;
    }
    // MP4: the edit list says which decoded frames are audible (AAC priming and padding).
    let edit = if crate::sniff(bytes) == Some(crate::DeclaredType::Mp4) {
        crate::mp4edit::sound_edit(bytes)
    } else {
        None
    };
    let mut sink = Sink::new(max_duration_ms, edit);
    if params.codec == CODEC_TYPE_OPUS {
        decode_opus(format.as_mut(), track_id, &params, &mut sink)?;
    } else {
        decode_symphonia(format.as_mut(), track_id, &params, &mut sink)?;
    }
    sink.finish()
}

/// Takes decoded frames: downmixes them, applies the edit list, enforces the duration limit
/// (on the audio kept, and on every frame decoded) and feeds the resampler.
struct Sink {
    max_duration_ms: u64,
    edit: Option<crate::mp4edit::Edit>,
    /// Source rate, resampler, frames still to skip and frames still to keep (edit list).
    stream: Option<(u32, Resampling, usize, usize)>,
    /// Source frames accepted so far.
    taken: u64,
    /// Source frames decoded so far, kept or dropped.
    decoded: u64,
    mono: Vec<f32>,
}

impl Sink {
    fn new(max_duration_ms: u64, edit: Option<crate::mp4edit::Edit>) -> Sink {
        Sink {
            max_duration_ms,
            edit,
            stream: None,
            taken: 0,
            decoded: 0,
            mono: Vec::new(),
        }
    }

    /// Takes interleaved frames of `channels` channels at `rate`.
    fn push(
        &mut self,
        interleaved: &[f32],
        channels: usize,
        rate: u32,
    ) -> Result<(), ConvertError> {
        check_shape(rate, channels)?;
        // Every decoded frame counts: an edit list that drops most of the stream does not
        // buy decoding time beyond the limit.
        self.decoded += (interleaved.len() / channels) as u64;
        let budget_ms = self.max_duration_ms.saturating_add(DECODE_SLACK_MS);
        if self.decoded > budget_ms.saturating_mul(u64::from(rate)) / 1000 {
            return Err(ConvertError::TooLong {
                limit_ms: self.max_duration_ms,
            });
        }
        let (stream_rate, resampler, skip, keep) = match &mut self.stream {
            Some(stream) => stream,
            None => {
                let (skip, keep) = self
                    .edit
                    .map_or((0, usize::MAX), |edit| edit.frames_at(rate));
                self.stream
                    .insert((rate, Resampling::new(rate)?, skip, keep))
            }
        };
        if *stream_rate != rate {
            return Err(undecodable("the sample rate changes mid-stream"));
        }
        let scale = 1.0 / channels as f32;
        self.mono.clear();
        self.mono.extend(
            interleaved
                .chunks_exact(channels)
                .map(|frame| frame.iter().sum::<f32>() * scale),
        );
        let from = (*skip).min(self.mono.len());
        *skip -= from;
        let to = from + (self.mono.len() - from).min(*keep);
        *keep -= to - from;
        if to > from {
            resampler.push(&self.mono[from..to])?;
            self.taken += (to - from) as u64;
        }
        let limit_frames = self.max_duration_ms.saturating_mul(u64::from(rate)) / 1000;
        if self.taken > limit_frames {
            return Err(ConvertError::TooLong {
                limit_ms: self.max_duration_ms,
            });
        }
        Ok(())
    }

    /// The audio at the target rate.
    fn finish(self) -> Result<Vec<f32>, ConvertError> {
        match self.stream {
            Some((_, resampler, _, _)) if self.taken > 0 => resampler.finish(),
            _ => Err(undecodable("the stream holds no audio samples")),
        }
    }
}

/// The next packet of `track_id`, `None` at the end of the stream.
fn next_packet(
    format: &mut dyn FormatReader,
    track_id: u32,
) -> Result<Option<Packet>, ConvertError> {
    loop {
        match format.next_packet() {
            Ok(packet) if packet.track_id() == track_id => return Ok(Some(packet)),
            Ok(_) => continue,
            Err(SymError::IoError(e)) if e.kind() == ErrorKind::UnexpectedEof => return Ok(None),
            Err(SymError::ResetRequired) => return Ok(None),
            Err(e) => return Err(undecodable(format!("broken container ({e})"))),
        }
    }
}

/// Counts undecodable packets: a few are tolerated (a damaged frame), a run of them is not.
struct BadPackets {
    consecutive: usize,
}

impl BadPackets {
    fn record(&mut self, e: impl std::fmt::Display) -> Result<(), ConvertError> {
        self.consecutive += 1;
        if self.consecutive >= MAX_BAD_PACKETS {
            return Err(undecodable(format!("corrupt audio data ({e})")));
        }
        Ok(())
    }
}

fn decode_symphonia(
    format: &mut dyn FormatReader,
    track_id: u32,
    params: &CodecParameters,
    sink: &mut Sink,
) -> Result<(), ConvertError> {
    let mut decoder = symphonia::default::get_codecs()
        .make(params, &DecoderOptions::default())
        .map_err(|e| undecodable(format!("unsupported codec ({e})")))?;
    let mut bad = BadPackets { consecutive: 0 };
    let mut buffer: Option<SampleBuffer<f32>> = None;
    while let Some(packet) = next_packet(format, track_id)? {
        let decoded = match decoder.decode(&packet) {
            Ok(decoded) => decoded,
            Err(SymError::DecodeError(e)) => {
                bad.record(e)?;
                continue;
            }
            Err(SymError::IoError(e)) => {
                bad.record(e)?;
                continue;
            }
            Err(SymError::ResetRequired) => break,
            Err(e) => return Err(undecodable(e)),
        };
        bad.consecutive = 0;
        if decoded.frames() == 0 {
            continue;
        }
        let spec = *decoded.spec();
        let needed = decoded.capacity() as u64;
        let buf = match &mut buffer {
            Some(b) if b.capacity() as u64 >= needed * spec.channels.count() as u64 => b,
            _ => buffer.insert(SampleBuffer::new(needed, spec)),
        };
        buf.copy_interleaved_ref(decoded);
        sink.push(buf.samples(), spec.channels.count(), spec.rate)?;
    }
    Ok(())
}

/// Opus in Ogg: symphonia demultiplexes, `ropus` (a pure-Rust port of the reference libopus
/// decoder, no C) decodes at 48 kHz mono (it downmixes stereo itself). Pre-skip and end trimming come from the packets' trim values.
fn decode_opus(
    format: &mut dyn FormatReader,
    track_id: u32,
    params: &CodecParameters,
    sink: &mut Sink,
) -> Result<(), ConvertError> {
    const RATE: u32 = 48_000;
    let channels = params.channels.map(|c| c.count()).unwrap_or(1);
    if !(1..=2).contains(&channels) {
        return Err(undecodable(format!(
            "Opus with {channels} channels is not supported"
        )));
    }
    let mut decoder = ropus::Decoder::new(RATE, ropus::Channels::Mono)
        .map_err(|e| undecodable(format!("{e:?}")))?;
    // 120 ms at 48 kHz is the longest Opus packet.
    let mut pcm = vec![0f32; 5760];
    let mut bad = BadPackets { consecutive: 0 };
    let mut skip = params.delay.unwrap_or(0) as usize;
    let mut trimmed_by_packets = false;
    while let Some(packet) = next_packet(format, track_id)? {
        let frames = match decoder.decode_float(&packet.data, &mut pcm, ropus::DecodeMode::Normal) {
            Ok(frames) => frames.min(pcm.len()),
            Err(e) => {
                bad.record(format!("{e:?}"))?;
                continue;
            }
        };
        bad.consecutive = 0;
        if packet.trim_start > 0 || packet.trim_end > 0 {
            // The demuxer computed gapless trimming from the granule positions: use it.
            trimmed_by_packets = true;
            skip = 0;
        }
        let start = if trimmed_by_packets {
            (packet.trim_start as usize).min(frames)
        } else {
            let s = skip.min(frames);
            skip -= s;
            s
        };
        let end = frames.saturating_sub(packet.trim_end as usize).max(start);
        sink.push(&pcm[start..end], 1, RATE)?;
    }
    Ok(())
}
