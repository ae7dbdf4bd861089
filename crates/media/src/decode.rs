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

/// Consecutive undecodable packets after which a stream is given up.
const MAX_BAD_PACKETS: usize = 32;

/// Decoded audio: one channel, at `rate` hertz.
pub(crate) struct Decoded {
    pub samples: Vec<f32>,
    pub rate: u32,
}

fn undecodable(what: impl std::fmt::Display) -> ConvertError {
    ConvertError::Undecodable(what.to_string())
}

/// Decodes the first audio track of `bytes`, downmixed to mono. Stops with
/// [`ConvertError::TooLong`] as soon as the decoded audio exceeds `max_duration_ms`.
pub(crate) fn decode(bytes: &[u8], max_duration_ms: u64) -> Result<Decoded, ConvertError> {
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
    let mut sink = Sink::new(max_duration_ms);
    if params.codec == CODEC_TYPE_OPUS {
        decode_opus(format.as_mut(), track_id, &params, &mut sink)?;
    } else {
        decode_symphonia(format.as_mut(), track_id, &params, &mut sink)?;
    }
    let mut decoded = sink.finish()?;
    let edit = if crate::sniff(bytes) == Some(crate::DeclaredType::Mp4) {
        crate::mp4edit::sound_edit(bytes)
    } else {
        None
    };
    if let Some(edit) = edit {
        let (skip, keep) = edit.frames_at(decoded.rate);
        let end = skip.saturating_add(keep).min(decoded.samples.len());
        decoded.samples = decoded
            .samples
            .get(skip..end)
            .map(<[f32]>::to_vec)
            .unwrap_or_default();
    }
    Ok(decoded)
}

/// Collects mono samples and enforces the duration limit while decoding.
struct Sink {
    samples: Vec<f32>,
    rate: Option<u32>,
    max_duration_ms: u64,
}

impl Sink {
    fn new(max_duration_ms: u64) -> Sink {
        Sink {
            samples: Vec::new(),
            rate: None,
            max_duration_ms,
        }
    }

    /// Appends interleaved frames of `channels` channels at `rate`, averaged to mono.
    fn push(
        &mut self,
        interleaved: &[f32],
        channels: usize,
        rate: u32,
    ) -> Result<(), ConvertError> {
        if channels == 0 || rate == 0 {
            return Err(undecodable("a stream without channels or sample rate"));
        }
        match self.rate {
            None => self.rate = Some(rate),
            Some(r) if r != rate => return Err(undecodable("the sample rate changes mid-stream")),
            Some(_) => {}
        }
        let scale = 1.0 / channels as f32;
        self.samples.extend(
            interleaved
                .chunks_exact(channels)
                .map(|frame| frame.iter().sum::<f32>() * scale),
        );
        let limit_frames = self.max_duration_ms.saturating_mul(u64::from(rate)) / 1000;
        if self.samples.len() as u64 > limit_frames {
            return Err(ConvertError::TooLong {
                limit_ms: self.max_duration_ms,
            });
        }
        Ok(())
    }

    fn finish(self) -> Result<Decoded, ConvertError> {
        match self.rate {
            Some(rate) if !self.samples.is_empty() => Ok(Decoded {
                samples: self.samples,
                rate,
            }),
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
