//! The SIP peers of the voice tests, which the project does not write, run as processes on
//! loopback and bounded in time: SIPp (Debian's `sip-tester`, with its DTMF pcaps) to place
//! calls and check answers, baresip (`baresip-core`, driven through its `ctrl_tcp` module)
//! to answer or place calls that play a WAV file and record what they hear, and sox to
//! measure that audio.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicU16, Ordering};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::process::{Child, Command};

use crate::helpers::skip;

/// Whether a program is installed; says it is skipped (a failure in CI) when not.
pub(crate) fn installed(program: &str) -> bool {
    let found = std::env::var_os("PATH")
        .map(|paths| std::env::split_paths(&paths).any(|d| d.join(program).is_file()))
        .unwrap_or(false);
    if !found {
        skip(&format!("{program} is not installed (.ci/run installs it)"));
    }
    found
}

/// Loopback ports for the peers: one block of 10 per use, never twice in this process,
/// between 12000 and 19999 (below the RTP ports of dialtone's nodes, 20000 and up, and
/// below the ephemeral ports the system gives client sockets, 32768 and up).
pub(crate) fn ports() -> u16 {
    static NEXT: AtomicU16 = AtomicU16::new(0);
    let offset = (std::process::id() % 80) as u16 * 100;
    12_000 + (offset + NEXT.fetch_add(10, Ordering::Relaxed)) % 8_000
}

/// A 16-bit 8 kHz mono WAV of a sine at `hz` for `ms`, at about -10 dBFS.
pub(crate) fn tone_wav(hz: f32, ms: u32) -> Vec<u8> {
    let n = ms as usize * 8;
    let pcm: Vec<i16> = (0..n)
        .map(|i| ((2.0 * std::f32::consts::PI * hz * i as f32 / 8000.0).sin() * 10_000.0) as i16)
        .collect();
    dialtone_media::pcm_wav(&pcm)
}

/// A SIPp run placing one call.
pub(crate) struct Sipp {
    child: Child,
    dir: tempfile::TempDir,
}

impl Sipp {
    /// Places one call to `service` at `target` with the scenario `xml` (`{pcaps}` is the
    /// directory of SIPp's DTMF pcaps), from `ip`.
    pub(crate) fn call(
        xml: &str,
        target: SocketAddr,
        service: &str,
        ip: &str,
        extra: &[&str],
    ) -> Self {
        let port = ports().to_string();
        let mut args = vec![
            target.to_string(),
            "-s".into(),
            service.into(),
            "-i".into(),
            ip.into(),
        ];
        args.extend(["-p".into(), port]);
        args.extend(extra.iter().map(|a| (*a).to_owned()));
        Self::spawn(&xml.replace("{pcaps}", "/usr/share/sip-tester"), &args)
    }

    /// Answers one call on `port` (127.0.0.1) with the scenario `xml`.
    pub(crate) fn serve(xml: &str, port: u16) -> Self {
        let args = ["-i", "127.0.0.1", "-p", &port.to_string()].map(str::to_owned);
        Self::spawn(xml, &args)
    }

    /// Runs SIPp for one call of the scenario `xml` with `args`, its media on the port
    /// after the SIP one (`-p` must be among them).
    fn spawn(xml: &str, args: &[String]) -> Self {
        let dir = tempfile::tempdir().expect("sipp dir");
        let file = dir.path().join("scenario.xml");
        std::fs::write(&file, xml).expect("scenario");
        let sip_port: u16 = args
            .iter()
            .position(|a| a == "-p")
            .and_then(|i| args.get(i + 1))
            .and_then(|p| p.parse().ok())
            .expect("-p");
        let child = Command::new("sipp")
            .args(args)
            .args(["-sf", file.to_str().unwrap_or_default(), "-m", "1"])
            .args(["-mp", &(sip_port + 2).to_string()])
            .args([
                "-timeout",
                "40s",
                "-timeout_error",
                "-nostdin",
                "-trace_err",
            ])
            .args([
                "-error_file",
                dir.path().join("errors.log").to_str().unwrap_or_default(),
            ])
            .current_dir(dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("sipp starts");
        Self { child, dir }
    }

    /// Waits for the call to end: whether every step of the scenario passed, and SIPp's
    /// errors when not.
    pub(crate) async fn finish(mut self) -> (bool, String) {
        let status = tokio::time::timeout(Duration::from_secs(60), self.child.wait())
            .await
            .expect("sipp ends within a minute")
            .expect("sipp status");
        let errors =
            std::fs::read_to_string(self.dir.path().join("errors.log")).unwrap_or_default();
        (status.success(), errors)
    }
}

/// The start and end of every SIPp scenario's INVITE, up to the body.
pub(crate) const INVITE_HEAD: &str = r#"
      INVITE sip:[service]@[remote_ip]:[remote_port] SIP/2.0
      Via: SIP/2.0/[transport] [local_ip]:[local_port];branch=[branch]
      From: <sip:+447700900999@[local_ip]:[local_port]>;tag=[pid]SIPpTag00[call_number]
      To: <sip:[service]@[remote_ip]:[remote_port]>
      Call-ID: [call_id]
      CSeq: 1 INVITE
      Contact: sip:sipp@[local_ip]:[local_port]
      Max-Forwards: 70
"#;

/// An SDP offer of PCMU with telephone-events (or without them: `events` false).
pub(crate) fn offer(events: bool) -> String {
    let (fmt, te) = if events {
        (
            "0 101",
            "      a=rtpmap:101 telephone-event/8000\n      a=fmtp:101 0-15\n",
        )
    } else {
        ("0", "")
    };
    format!(
        "      Content-Type: application/sdp\n      Content-Length: [len]\n\n      v=0\n      o=user1 53655765 2353687637 IN IP[local_ip_type] [local_ip]\n      s=-\n      c=IN IP[media_ip_type] [media_ip]\n      t=0 0\n      m=audio [media_port] RTP/AVP {fmt}\n      a=rtpmap:0 PCMU/8000\n{te}"
    )
}

/// The ACK of the 200 of the INVITE.
pub(crate) const ACK: &str = r#"
  <send>
    <![CDATA[
      ACK sip:[service]@[remote_ip]:[remote_port] SIP/2.0
      Via: SIP/2.0/[transport] [local_ip]:[local_port];branch=[branch]
      From: <sip:+447700900999@[local_ip]:[local_port]>;tag=[pid]SIPpTag00[call_number]
      To: <sip:[service]@[remote_ip]:[remote_port]>[peer_tag_param]
      Call-ID: [call_id]
      CSeq: 1 ACK
      Contact: sip:sipp@[local_ip]:[local_port]
      Max-Forwards: 70
      Content-Length: 0
    ]]>
  </send>
"#;

/// Waiting for dialtone's BYE, and answering it.
pub(crate) const BYE_RECEIVED: &str = r#"
  <recv request="BYE" timeout="30000"/>
  <send>
    <![CDATA[
      SIP/2.0 200 OK
      [last_Via:]
      [last_From:]
      [last_To:]
      [last_Call-ID:]
      [last_CSeq:]
      Contact: <sip:sipp@[local_ip]:[local_port]>
      Content-Length: 0
    ]]>
  </send>
"#;

/// Hanging up: our BYE and its 200.
pub(crate) const BYE_SENT: &str = r#"
  <send retrans="500">
    <![CDATA[
      BYE sip:[service]@[remote_ip]:[remote_port] SIP/2.0
      Via: SIP/2.0/[transport] [local_ip]:[local_port];branch=[branch]
      From: <sip:+447700900999@[local_ip]:[local_port]>;tag=[pid]SIPpTag00[call_number]
      To: <sip:[service]@[remote_ip]:[remote_port]>[peer_tag_param]
      Call-ID: [call_id]
      CSeq: 2 BYE
      Contact: sip:sipp@[local_ip]:[local_port]
      Max-Forwards: 70
      Content-Length: 0
    ]]>
  </send>
  <recv response="200"/>
"#;

/// A scenario: INVITE with `offer`, answered, then `middle`.
pub(crate) fn answered_call(offer: &str, middle: &str) -> String {
    format!(
        r#"<?xml version="1.0" encoding="ISO-8859-1" ?>
<scenario name="dialtone test">
  <send retrans="500">
    <![CDATA[{INVITE_HEAD}{offer}
    ]]>
  </send>
  <recv response="100" optional="true"/>
  <recv response="180" optional="true"/>
  <recv response="183" optional="true"/>
  <recv response="200" rtd="true"/>
{ACK}
{middle}
</scenario>
"#
    )
}

/// A scenario: INVITE refused with `status`, whose `Reason` header must match `reason`
/// (a regular expression).
pub(crate) fn refused_call(status: u16, reason: &str) -> String {
    let offer = offer(true);
    format!(
        r#"<?xml version="1.0" encoding="ISO-8859-1" ?>
<scenario name="dialtone refusal">
  <send retrans="500">
    <![CDATA[{INVITE_HEAD}{offer}
    ]]>
  </send>
  <recv response="100" optional="true"/>
  <recv response="180" optional="true"/>
  <recv response="{status}">
    <action>
      <ereg regexp="{reason}" search_in="hdr" header="Reason:" check_it="true" assign_to="reason"/>
    </action>
  </recv>
  <send>
    <![CDATA[
      ACK sip:[service]@[remote_ip]:[remote_port] SIP/2.0
      Via: SIP/2.0/[transport] [local_ip]:[local_port];branch=[branch-4]
      From: <sip:+447700900999@[local_ip]:[local_port]>;tag=[pid]SIPpTag00[call_number]
      To: <sip:[service]@[remote_ip]:[remote_port]>[peer_tag_param]
      Call-ID: [call_id]
      CSeq: 1 ACK
      Max-Forwards: 70
      Content-Length: 0
    ]]>
  </send>
  <Reference variables="reason"/>
</scenario>
"#
    )
}

/// A baresip user agent: it plays `source` (a WAV file) on every call and records what it
/// hears (`dump-*-dec.wav`), answers calls by itself, and takes commands. It hangs up when
/// its source ends: give it one longer than the call.
pub(crate) struct Baresip {
    child: Child,
    dir: tempfile::TempDir,
    /// Where it receives SIP.
    pub(crate) sip: SocketAddr,
    /// The control connection (baresip serves one at a time) and what it sent so far.
    ctrl: tokio::sync::Mutex<(TcpStream, String)>,
}

impl Baresip {
    /// Starts one on loopback, whose user (the number it answers to) is `user`.
    pub(crate) async fn start(source: &[u8], user: &str) -> Self {
        let dir = tempfile::tempdir().expect("baresip dir");
        let port = ports();
        // baresip takes SIP on `port` and TLS on the next; commands come on port + 3, RTP
        // on the rest of the block.
        let (sip, ctrl) = (
            SocketAddr::from(([127, 0, 0, 1], port)),
            SocketAddr::from(([127, 0, 0, 1], port + 3)),
        );
        let source_path = dir.path().join("source.wav");
        std::fs::write(&source_path, source).expect("source");
        let rec = dir.path().join("rec");
        std::fs::create_dir_all(&rec).expect("rec dir");
        let config = format!(
            "poll_method epoll\nsip_listen {sip}\naudio_player aubridge,nil\naudio_source aufile,{}\naudio_alert aubridge,nil\nrtp_ports {}-{}\nmodule_path /usr/lib/baresip/modules\nmodule g711.so\nmodule aubridge.so\nmodule aufile.so\nmodule sndfile.so\nmodule_app account.so\nmodule_app menu.so\nmodule_app ctrl_tcp.so\nctrl_tcp_listen {ctrl}\nsnd_path {}\n",
            source_path.display(),
            port + 4,
            port + 9,
            rec.display()
        );
        std::fs::write(dir.path().join("config"), config).expect("config");
        std::fs::write(
            dir.path().join("accounts"),
            format!("<sip:{user}@{sip}>;regint=0;answermode=auto;audio_codecs=PCMU,PCMA\n"),
        )
        .expect("accounts");
        let child = Command::new("baresip")
            .args(["-f", dir.path().to_str().unwrap_or_default()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("baresip starts");
        for _ in 0..100 {
            if let Ok(stream) = TcpStream::connect(ctrl).await {
                return Self {
                    child,
                    dir,
                    sip,
                    ctrl: tokio::sync::Mutex::new((stream, String::new())),
                };
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("baresip did not start");
    }

    /// Runs a command (`dial`, `hangup`, `sndcode`...) through ctrl_tcp.
    pub(crate) async fn command(&self, command: &str, params: &str) {
        let mut ctrl = self.ctrl.lock().await;
        let body =
            serde_json::json!({"command": command, "params": params, "token": "t"}).to_string();
        let message = format!("{}:{body},", body.len());
        ctrl.0
            .write_all(message.as_bytes())
            .await
            .expect("command sent");
        read_until(&mut ctrl, "\"response\"").await;
    }

    /// Waits (at most 30 s: a loaded machine is slow to set calls up) for an event of type `kind` (such as `CALL_ESTABLISHED`), or
    /// finds it among those already received.
    pub(crate) async fn wait(&self, kind: &str) {
        let mut ctrl = self.ctrl.lock().await;
        let found = read_until(&mut ctrl, &format!("\"type\":\"{kind}\"")).await;
        assert!(found, "no {kind} event from baresip: {}", ctrl.1);
    }

    /// Stops it (its recordings are complete then) and returns the files it recorded of
    /// what it heard, oldest first.
    pub(crate) async fn stop(mut self) -> (tempfile::TempDir, Vec<PathBuf>) {
        if let Some(pid) = self.child.id() {
            let _ = Command::new("kill").arg(pid.to_string()).status().await;
        }
        let _ = tokio::time::timeout(Duration::from_secs(10), self.child.wait()).await;
        let mut heard: Vec<PathBuf> = std::fs::read_dir(self.dir.path().join("rec"))
            .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
            .unwrap_or_default();
        heard.retain(|p| p.to_string_lossy().ends_with("-dec.wav"));
        heard.sort();
        (self.dir, heard)
    }
}

/// What sox measures of a WAV file (optionally through a band-pass around `band`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Measured {
    /// Seconds.
    pub(crate) length: f64,
    /// RMS amplitude over the whole file, 0 to 1: it falls as silence around a sound
    /// grows, so it suits only recordings whose length the test sets.
    pub(crate) rms: f64,
    /// RMS amplitude of the loudest tenth of a second, 0 to 1: how loud a sound was wherever
    /// it fell in a recording of any length.
    pub(crate) loudest: f64,
    /// The dominant frequency, Hz.
    pub(crate) frequency: f64,
}

/// Measures `file` with `sox ... -n [sinc lo-hi] stat stats -w 0.1`. (sox 14.4's `stats`
/// misreports longer windows: at 0.5 s its peak came out below the file's mean.)
pub(crate) async fn measure(file: &Path, band: Option<(u32, u32)>) -> Measured {
    let mut cmd = Command::new("sox");
    cmd.arg(file).arg("-n");
    if let Some((lo, hi)) = band {
        cmd.args(["sinc", &format!("{lo}-{hi}")]);
    }
    let out = cmd
        .args(["stat", "stats", "-w", "0.1"])
        .output()
        .await
        .expect("sox runs");
    let text = String::from_utf8_lossy(&out.stderr);
    // `stat` writes `Name:  value`, `stats` `Name  value` (`-inf` for silence).
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name))
            .map(|v| v.trim_start_matches([':', ' ']))
            .and_then(|v| v.trim().parse::<f64>().ok())
    };
    Measured {
        length: field("Length (seconds)").unwrap_or(0.0),
        rms: field("RMS     amplitude").unwrap_or(0.0),
        frequency: field("Rough   frequency").unwrap_or(0.0),
        loudest: field("RMS Pk dB").map_or(0.0, |db| 10f64.powf(db / 20.0)),
    }
}

/// Reads the control connection until what it sent holds `needle` (at most 15 s); the text
/// up to it is consumed.
async fn read_until(ctrl: &mut (TcpStream, String), needle: &str) -> bool {
    let mut buf = vec![0u8; 65536];
    let found = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            if let Some(at) = ctrl.1.find(needle) {
                ctrl.1.drain(..at + needle.len());
                return true;
            }
            let n = ctrl.0.read(&mut buf).await.unwrap_or(0);
            if n == 0 {
                return false;
            }
            ctrl.1.push_str(&String::from_utf8_lossy(&buf[..n]));
        }
    })
    .await;
    found.unwrap_or(false)
}
