//! One leg's media task: its UDP socket, its 20 ms clock, what it sends ([`Outgoing`]) and
//! what it does with what it hears (jitter buffer, keys, recordings, the bridged leg).
//!
//! The clock is absolute: packet `n` is due `n × 20 ms` after the start, so a late wake-up
//! is caught up on the next one instead of drifting; a leg more than 200 ms behind (the
//! node was starved) skips ahead instead of bursting. Symmetric RTP: once the far end's
//! first packet arrives, packets go back to where it came from (its NAT), and packets from
//! anywhere else are ignored.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use dialtone_carrier::voice::PlayTag;
use rtp_types::{RtpPacket, RtpPacketBuilder};
use tokio::net::UdpSocket;
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::event::{FRAME, MediaEvent, Pcm};
use super::inband::Detector;
use super::jitter::JitterBuffer;
use super::outgoing::{Frame, Outgoing};
use super::recorder::{CallRecording, Voicemail};
use super::stats::MediaStats;
use super::telephone_event::EventReceiver;
use crate::sdp::Negotiated;

/// A 20 ms tick.
const TICK: Duration = Duration::from_millis(20);
/// A packet sent this late after its turn is counted late.
const LATE: Duration = Duration::from_millis(10);
/// Further behind than this, the clock skips ahead.
const BEHIND: Duration = Duration::from_millis(200);
/// Commands waiting for a leg (relayed audio beyond this is dropped).
const COMMANDS: usize = 256;

/// How a leg's media runs.
#[derive(Debug, Clone, Copy)]
pub struct LegConfig {
    /// What the two ends agreed.
    pub negotiated: Negotiated,
    /// Our payload type for the codec (the far end's number for it).
    pub codec_pt: u8,
    /// Listen for keys as tones in the audio (the far end has no telephone-events, or the
    /// trunk says to).
    pub inband_dtmf: bool,
    /// Packets the jitter buffer holds before it plays.
    pub jitter_depth: usize,
    /// The longest call recording kept.
    pub max_recording_ms: u64,
    /// A far end that sends no RTP this long (not on hold) is gone: the leg reports
    /// [`MediaEvent::Silent`].
    pub media_timeout_ms: u64,
}

/// What a leg is asked to do.
#[derive(Debug)]
pub enum MediaCommand {
    /// Play a prompt (reported with its tag when done).
    Play(Pcm, Option<PlayTag>),
    /// The prompts queued now stop at the next key (a gather started).
    BargeIn,
    /// Record the far end after a beep: until `max_ms`, the key `finish`, or the end.
    Record {
        /// Longest recording.
        max_ms: u64,
        /// The key that ends it.
        finish: Option<char>,
        /// The beep played first.
        beep: Pcm,
    },
    /// Record both directions to the end of the call.
    StartCallRecording,
    /// Send keys to the far end.
    SendKeys(String),
    /// Relay audio and keys with another leg (None: stop relaying).
    Bridge(Option<Leg>),
    /// Audio relayed from the bridged leg.
    Relayed(Vec<i16>),
    /// A key relayed from the bridged leg.
    RelayedKey(char),
    /// The far end moved or changed its stream (a re-INVITE), with our payload type.
    Renegotiated(Negotiated, u8),
    /// End: recordings are delivered, then the task ends.
    Close,
}

/// Where a leg's events go (called on the leg's task: it must not block).
pub type Events = Box<dyn Fn(MediaEvent) + Send + Sync>;

/// What a leg held when it closed: its voicemail in progress and its call recording.
#[derive(Debug, Default)]
pub struct Closed {
    /// A voicemail that was being recorded.
    pub voicemail: Option<Vec<i16>>,
    /// The call recording, both directions mixed.
    pub recording: Option<Vec<i16>>,
}

/// A handle on a running leg.
#[derive(Debug, Clone)]
pub struct Leg {
    commands: mpsc::Sender<MediaCommand>,
    local: SocketAddr,
}

impl Leg {
    /// Starts the media of a leg on `socket`; its events go to `events`.
    pub fn spawn(
        socket: UdpSocket,
        config: LegConfig,
        events: Events,
        stats: Arc<MediaStats>,
    ) -> std::io::Result<(Leg, tokio::task::JoinHandle<Closed>)> {
        let local = socket.local_addr()?;
        let (tx, rx) = mpsc::channel(COMMANDS);
        let task = Task::new(socket, config, events, stats);
        let handle = tokio::spawn(task.run(rx));
        Ok((
            Leg {
                commands: tx,
                local,
            },
            handle,
        ))
    }

    /// Where this leg receives RTP.
    pub fn local(&self) -> SocketAddr {
        self.local
    }

    /// Sends a command; false when the leg has ended.
    pub async fn send(&self, command: MediaCommand) -> bool {
        self.commands.send(command).await.is_ok()
    }

    /// Sends a command if there is room at once (relayed audio: dropped rather than
    /// waited for).
    fn offer(&self, command: MediaCommand) {
        let _ = self.commands.try_send(command);
    }
}

/// The state of one leg's task.
struct Task {
    socket: UdpSocket,
    config: LegConfig,
    remote: SocketAddr,
    latched: bool,
    events: Events,
    stats: Arc<MediaStats>,
    outgoing: Outgoing,
    jitter: JitterBuffer,
    heard: Vec<i16>,
    keys_in: EventReceiver,
    detector: Option<Detector>,
    voicemail: Option<Voicemail>,
    recording: Option<CallRecording>,
    peer: Option<Leg>,
    /// When the far end's last packet came (or the media started).
    last_heard: Instant,
    /// The far end's silence was reported.
    silent: bool,
    // RTP sending state.
    ssrc: u32,
    seq: u16,
    timestamp: u32,
    /// The timestamp of the telephone-event being sent.
    event_timestamp: Option<u32>,
    packet: Vec<u8>,
    payload: Vec<u8>,
    /// Counters not yet added to the node's.
    sent: u64,
    sent_late: u64,
}

impl Task {
    fn new(socket: UdpSocket, config: LegConfig, events: Events, stats: Arc<MediaStats>) -> Self {
        let depth = config.jitter_depth.max(1);
        Self {
            socket,
            remote: config.negotiated.remote,
            latched: false,
            detector: config.inband_dtmf.then(Detector::default),
            config,
            events,
            stats,
            outgoing: Outgoing::default(),
            jitter: JitterBuffer::new(depth, depth * 5 + 5),
            heard: Vec::with_capacity(FRAME * 3),
            keys_in: EventReceiver::default(),
            voicemail: None,
            recording: None,
            peer: None,
            last_heard: Instant::now(),
            silent: false,
            ssrc: rand_u32(),
            seq: rand_u32() as u16,
            timestamp: rand_u32(),
            event_timestamp: None,
            packet: Vec::with_capacity(200),
            payload: Vec::with_capacity(FRAME),
            sent: 0,
            sent_late: 0,
        }
    }

    async fn run(mut self, mut commands: mpsc::Receiver<MediaCommand>) -> Closed {
        self.stats.leg_started();
        let mut buf = vec![0u8; 2048];
        let mut due = Instant::now() + TICK;
        let sleep = tokio::time::sleep_until(due);
        tokio::pin!(sleep);
        let mut ticks = 0u32;
        loop {
            tokio::select! {
                command = commands.recv() => match command {
                    Some(MediaCommand::Close) | None => break,
                    Some(c) => self.command(c),
                },
                got = self.socket.recv_from(&mut buf) => {
                    if let Ok((n, from)) = got {
                        self.receive(&buf[..n], from);
                    }
                }
                () = &mut sleep => {
                    let now = Instant::now();
                    if now.duration_since(due) >= LATE {
                        self.sent_late += 1;
                    }
                    self.tick().await;
                    due += TICK;
                    if now.duration_since(due) > BEHIND {
                        due = now + TICK;
                    }
                    sleep.as_mut().reset(due);
                    ticks += 1;
                    if ticks.is_multiple_of(50) {
                        self.flush_stats();
                        self.check_silence(now);
                    }
                }
            }
        }
        self.close()
    }

    fn emit(&self, event: MediaEvent) {
        (self.events)(event);
    }

    fn command(&mut self, command: MediaCommand) {
        match command {
            MediaCommand::Play(pcm, tag) => self.outgoing.play(pcm, tag),
            MediaCommand::BargeIn => self.outgoing.arm_barge_in(),
            MediaCommand::Record {
                max_ms,
                finish,
                beep,
            } => {
                self.finish_voicemail();
                self.outgoing.play(beep, None);
                self.voicemail = Some(Voicemail::new(max_ms, finish));
            }
            MediaCommand::StartCallRecording => {
                if self.recording.is_none() {
                    self.recording = Some(CallRecording::new(self.config.max_recording_ms));
                }
            }
            MediaCommand::SendKeys(keys) => {
                let events = self.config.negotiated.telephone_event.is_some();
                for key in keys.chars() {
                    self.outgoing.send_key(key, events);
                }
            }
            MediaCommand::Bridge(peer) => self.peer = peer,
            MediaCommand::Relayed(samples) => self.outgoing.relay(&samples),
            MediaCommand::RelayedKey(key) => {
                let events = self.config.negotiated.telephone_event.is_some();
                self.outgoing.send_key(key, events);
            }
            MediaCommand::Renegotiated(negotiated, pt) => {
                if negotiated.remote != self.config.negotiated.remote {
                    self.remote = negotiated.remote;
                    self.latched = false;
                }
                self.config.negotiated = negotiated;
                self.config.codec_pt = pt;
                self.last_heard = Instant::now();
            }
            // Handled by the loop.
            MediaCommand::Close => {}
        }
    }

    fn receive(&mut self, datagram: &[u8], from: SocketAddr) {
        let Ok(packet) = RtpPacket::parse(datagram) else {
            return;
        };
        if !self.latched {
            self.remote = from;
            self.latched = true;
        } else if from != self.remote {
            return;
        }
        self.last_heard = Instant::now();
        let pt = packet.payload_type();
        if Some(pt) == self.config.negotiated.telephone_event {
            if let Some(key) = self.keys_in.receive(packet.timestamp(), packet.payload()) {
                self.key(key);
            }
        } else if pt == self.config.codec_pt {
            self.jitter.push(
                packet.ssrc(),
                packet.sequence_number(),
                packet.timestamp(),
                packet.payload(),
            );
        }
    }

    /// A key from the far end: it ends a voicemail that waits for it, else it cuts a
    /// gather's prompt, goes to the bridged leg and is reported.
    fn key(&mut self, key: char) {
        if self
            .voicemail
            .as_ref()
            .is_some_and(|v| v.capturing && v.finish == Some(key))
        {
            self.finish_voicemail();
            return;
        }
        for tag in self.outgoing.barge_in() {
            self.emit(MediaEvent::Played(tag));
        }
        if let Some(peer) = &self.peer {
            peer.offer(MediaCommand::RelayedKey(key));
        }
        self.emit(MediaEvent::Digit(key));
    }

    fn finish_voicemail(&mut self) {
        if let Some(v) = self.voicemail.take() {
            self.emit(MediaEvent::Recorded(v.into_samples()));
        }
    }

    /// One 20 ms turn: send a packet, take a frame of what was heard.
    async fn tick(&mut self) {
        let mut sent = [0i16; FRAME];
        let mut played = Vec::new();
        let frame = self.outgoing.next(&mut sent, &mut played);
        for tag in played {
            self.emit(MediaEvent::Played(tag));
        }
        self.send(frame, &sent).await;
        let heard = self.hear();
        let mut keys = Vec::new();
        if let Some(d) = self.detector.as_mut() {
            keys = d.push(&heard);
        }
        for key in keys {
            self.key(key);
        }
        if let Some(v) = self.voicemail.as_mut() {
            if !v.capturing && self.outgoing.idle() {
                v.capturing = true;
            }
            if v.push(&heard) {
                self.finish_voicemail();
            }
        }
        if let Some(r) = self.recording.as_mut() {
            r.push(&sent, &heard);
        }
        if let Some(peer) = &self.peer {
            peer.offer(MediaCommand::Relayed(heard.to_vec()));
        }
    }

    /// Reports a far end that stopped sending (once), unless it put the call on hold.
    fn check_silence(&mut self, now: Instant) {
        let timeout = Duration::from_millis(self.config.media_timeout_ms);
        if !self.silent
            && self.config.media_timeout_ms > 0
            && self.config.negotiated.they_send()
            && now.duration_since(self.last_heard) > timeout
        {
            self.silent = true;
            self.emit(MediaEvent::Silent);
        }
    }

    /// The next 20 ms heard from the far end (silence where packets are missing).
    fn hear(&mut self) -> [i16; FRAME] {
        while self.heard.len() < FRAME {
            match self.jitter.pop() {
                Some((payload, _)) => self
                    .config
                    .negotiated
                    .codec
                    .decode(&payload, &mut self.heard),
                None => break,
            }
        }
        let mut frame = [0i16; FRAME];
        let n = self.heard.len().min(FRAME);
        frame[..n].copy_from_slice(&self.heard[..n]);
        self.heard.drain(..n);
        frame
    }

    async fn send(&mut self, frame: Frame, pcm: &[i16; FRAME]) {
        let on_hold = self.remote.ip().is_unspecified()
            || self.remote.port() == 0
            || !self.config.negotiated.we_send();
        let (pt, marker) = match frame {
            Frame::Event(payload, marker) => {
                let te = self.config.negotiated.telephone_event.unwrap_or(101);
                let ts = *self.event_timestamp.get_or_insert(self.timestamp);
                self.payload.clear();
                self.payload.extend_from_slice(&payload);
                self.write_packet(te, ts, marker);
                self.timestamp = self.timestamp.wrapping_add(FRAME as u32);
                if !on_hold {
                    self.transmit().await;
                }
                return;
            }
            Frame::Audio => (self.config.codec_pt, self.event_timestamp.take().is_some()),
        };
        self.payload.clear();
        self.config.negotiated.codec.encode(pcm, &mut self.payload);
        let ts = self.timestamp;
        self.write_packet(pt, ts, marker);
        self.timestamp = self.timestamp.wrapping_add(FRAME as u32);
        if !on_hold {
            self.transmit().await;
        }
    }

    fn write_packet(&mut self, pt: u8, timestamp: u32, marker: bool) {
        self.packet.clear();
        let builder = RtpPacketBuilder::<&[u8], &[u8]>::new()
            .payload_type(pt)
            .sequence_number(self.seq)
            .timestamp(timestamp)
            .ssrc(self.ssrc)
            .marker_bit(marker)
            .payload(self.payload.as_slice());
        builder.write_into_vec_unchecked(&mut self.packet);
        self.seq = self.seq.wrapping_add(1);
    }

    async fn transmit(&mut self) {
        if self.socket.send_to(&self.packet, self.remote).await.is_ok() {
            self.sent += 1;
        }
    }

    fn flush_stats(&mut self) {
        let j = self.jitter.stats();
        self.stats
            .add(self.sent, self.sent_late, j.received, j.lost, j.late);
        self.sent = 0;
        self.sent_late = 0;
        // The jitter buffer's counters are cumulative: start it over from zero.
        self.jitter.reset_stats();
    }

    /// Ends the leg: prompts cut short are reported, recordings handed back.
    fn close(mut self) -> Closed {
        for tag in self.outgoing.clear() {
            self.emit(MediaEvent::Played(tag));
        }
        self.flush_stats();
        self.stats.leg_ended();
        Closed {
            voicemail: self.voicemail.take().map(Voicemail::into_samples),
            recording: self.recording.take().map(CallRecording::into_samples),
        }
    }
}

/// A random 32-bit value (SSRC, first sequence number and timestamp: RFC 3550 5.1).
fn rand_u32() -> u32 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64),
    );
    h.finish() as u32
}
