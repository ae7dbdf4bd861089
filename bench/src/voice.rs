//! Calls held with real media: a release server with a SIP trunk on loopback, and SIPp
//! placing calls that stream RTP (a looping µ-law tone) to a number whose scenario answers,
//! plays a looping audio file and gathers. At each level of concurrent calls the benchmark
//! waits until every call is up, then reads the server's RTP counters and CPU over a window:
//! packets sent late (10 ms or more after their turn) and packets lost or late on receipt,
//! as a share of all packets, and CPU per held call. It stops at the first level over 1% or
//! where SIPp's calls failed, and reports the most calls held under 1%, the rate calls were
//! set up at, and the CPU per call.
//!
//! SIPp runs on the same 2 cores (its RTP threads send 50 packets a second per call): the
//! figures are those of the machine with its load generator, as for the HTTP benchmarks.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::{load, server};

/// A call of SIPp: INVITE with PCMU and telephone-events, RTP streamed from a looping
/// file, held `[hold]` ms, then BYE.
const UAC: &str = r#"<?xml version="1.0" encoding="ISO-8859-1" ?>
<scenario name="voice benchmark">
  <send retrans="500"><![CDATA[
      INVITE sip:[service]@[remote_ip]:[remote_port] SIP/2.0
      Via: SIP/2.0/[transport] [local_ip]:[local_port];branch=[branch]
      From: <sip:+447700900999@[local_ip]:[local_port]>;tag=[pid]SIPpTag00[call_number]
      To: <sip:[service]@[remote_ip]:[remote_port]>
      Call-ID: [call_id]
      CSeq: 1 INVITE
      Contact: sip:sipp@[local_ip]:[local_port]
      Max-Forwards: 70
      Content-Type: application/sdp
      Content-Length: [len]

      v=0
      o=user1 53655765 2353687637 IN IP[local_ip_type] [local_ip]
      s=-
      c=IN IP[media_ip_type] [media_ip]
      t=0 0
      m=audio [rtpstream_audio_port] RTP/AVP 0 101
      a=rtpmap:0 PCMU/8000
      a=rtpmap:101 telephone-event/8000
  ]]></send>
  <recv response="100" optional="true"/>
  <recv response="180" optional="true"/>
  <recv response="183" optional="true"/>
  <recv response="200" rtd="true"/>
  <send><![CDATA[
      ACK sip:[service]@[remote_ip]:[remote_port] SIP/2.0
      Via: SIP/2.0/[transport] [local_ip]:[local_port];branch=[branch]
      From: <sip:+447700900999@[local_ip]:[local_port]>;tag=[pid]SIPpTag00[call_number]
      To: <sip:[service]@[remote_ip]:[remote_port]>[peer_tag_param]
      Call-ID: [call_id]
      CSeq: 1 ACK
      Contact: sip:sipp@[local_ip]:[local_port]
      Max-Forwards: 70
      Content-Length: 0
  ]]></send>
  <nop><action><exec rtp_stream="[stream],-1,0"/></action></nop>
  <pause milliseconds="[hold]"/>
  <nop><action><exec rtp_stream="pause"/></action></nop>
  <send retrans="500"><![CDATA[
      BYE sip:[service]@[remote_ip]:[remote_port] SIP/2.0
      Via: SIP/2.0/[transport] [local_ip]:[local_port];branch=[branch]
      From: <sip:+447700900999@[local_ip]:[local_port]>;tag=[pid]SIPpTag00[call_number]
      To: <sip:[service]@[remote_ip]:[remote_port]>[peer_tag_param]
      Call-ID: [call_id]
      CSeq: 2 BYE
      Contact: sip:sipp@[local_ip]:[local_port]
      Max-Forwards: 70
      Content-Length: 0
  ]]></send>
  <recv response="200"/>
</scenario>
"#;

/// Writes SIPp's caller scenario into `dir` (with the looping audio it streams): calls from
/// `from` (SIPp's `[call_number]` may be part of it), held `hold_ms`; its path.
pub(crate) fn caller_scenario(
    dir: &std::path::Path,
    from: &str,
    hold_ms: u64,
) -> anyhow::Result<std::path::PathBuf> {
    let stream = dir.join("caller.wav");
    let status = std::process::Command::new("sox")
        .args(["-n", "-r", "8000", "-c", "1", "-e", "u-law"])
        .arg(&stream)
        .args(["synth", "10", "sine", "600", "vol", "0.3"])
        .status()?;
    anyhow::ensure!(status.success(), "sox could not make the caller's audio");
    let xml = UAC
        .replace("[stream]", &stream.display().to_string())
        .replace("[hold]", &hold_ms.to_string())
        .replace("sip:+447700900999@", &format!("sip:{from}@"));
    let scenario = dir.join("uac.xml");
    std::fs::write(&scenario, xml)?;
    Ok(scenario)
}

/// Answers, plays the file, gathers a key for 2 s, and again.
fn script(file: &str) -> String {
    format!(
        "branches:\n  inbound-call:\n    actions:\n      - action: play@v1\n        params: {{ media: \"{file}\" }}\n      - action: gather@v2\n        params: {{ maxDigits: 1, timeout: 2 }}\n      - goto: {{ branch: inbound-call }}\n"
    )
}

/// 16-bit 8 kHz WAV of a 440 Hz tone of `secs`.
fn tone_wav(secs: u32) -> Vec<u8> {
    let pcm: Vec<i16> = (0..secs * 8000)
        .map(|i| ((2.0 * std::f32::consts::PI * 440.0 * i as f32 / 8000.0).sin() * 8000.0) as i16)
        .collect();
    let data = (pcm.len() * 2) as u32;
    let mut out = Vec::with_capacity(44 + pcm.len() * 2);
    out.extend_from_slice(b"RIFF");
    out.extend_from_slice(&(36 + data).to_le_bytes());
    out.extend_from_slice(b"WAVEfmt ");
    out.extend_from_slice(&16u32.to_le_bytes());
    out.extend_from_slice(&1u16.to_le_bytes());
    out.extend_from_slice(&1u16.to_le_bytes());
    out.extend_from_slice(&8000u32.to_le_bytes());
    out.extend_from_slice(&16000u32.to_le_bytes());
    out.extend_from_slice(&2u16.to_le_bytes());
    out.extend_from_slice(&16u16.to_le_bytes());
    out.extend_from_slice(b"data");
    out.extend_from_slice(&data.to_le_bytes());
    for s in pcm {
        out.extend_from_slice(&s.to_le_bytes());
    }
    out
}

/// A free UDP port on loopback.
pub(crate) fn free_port() -> anyhow::Result<u16> {
    Ok(std::net::UdpSocket::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

/// The server's RTP counters and calls (`/admin/sip`).
pub(crate) async fn media(srv: &server::Server) -> anyhow::Result<Value> {
    let (status, v) = load::once(
        &srv.base,
        "GET",
        "/admin/sip",
        Some(&format!("Bearer {}", server::ADMIN)),
        None,
    )
    .await?;
    anyhow::ensure!(status == 200, "/admin/sip: {status} {v}");
    Ok(v["node"].clone())
}

/// What one level measured.
struct Level {
    calls: usize,
    /// RTP packets a second, sent and received, in the window.
    pps: (f64, f64),
    setup_rate: f64,
    bad_share: f64,
    cpu_per_call: f64,
    ok: bool,
}

/// A trunk for SIPp on loopback, without caps.
pub(crate) async fn sipp_trunk(srv: &server::Server) -> anyhow::Result<()> {
    let (status, v) = load::once(
        &srv.base,
        "POST",
        "/admin/sip",
        Some(&format!("Bearer {}", server::ADMIN)),
        Some(
            &json!({"name": "sipp", "host": "127.0.0.1", "max_calls": 100000, "calls_per_second": 10000})
                .to_string(),
        ),
    )
    .await?;
    anyhow::ensure!(status == 201, "trunk: {status} {v}");
    Ok(())
}

/// The account's number with the benchmark's scenario, and a 10 s audio file ready.
async fn prepare(srv: &server::Server, key: &str) -> anyhow::Result<String> {
    sipp_trunk(srv).await?;
    let number = srv.buy_number(key).await?;
    let (status, file) =
        load::upload(&srv.base, key, "/v2.0/audio-files", "loop", &tone_wav(10)).await?;
    anyhow::ensure!(status == 202, "upload: {status} {file}");
    let sid = file["sid"].as_str().unwrap_or_default().to_owned();
    for _ in 0..600 {
        if srv.get(key, &format!("/v2.0/audio-files/{sid}")).await?["status"] == "ready" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let scenario = srv
        .post(
            key,
            "/v2.0/actions",
            &json!({"name": "hold", "script": script(&sid)}),
        )
        .await?;
    let scenario = scenario["sid"].as_str().unwrap_or_default();
    let (status, _) = load::once_key(
        &srv.base,
        "PUT",
        &format!("/v2.0/actions/{scenario}/numbers/{number}"),
        key,
        None,
    )
    .await?;
    anyhow::ensure!(status == 204, "attach: {status}");
    Ok(number)
}

/// Runs the benchmark at `levels` of concurrent calls, each held `hold_secs`.
pub(crate) async fn run(
    binary: &std::path::Path,
    levels: &[usize],
    hold_secs: u64,
    cps: usize,
) -> anyhow::Result<()> {
    let sip_port = free_port()?;
    let listen = format!("127.0.0.1:{sip_port}");
    let mut srv = server::Server::start_with(
        binary,
        None,
        &["--sip-listen", &listen, "--rtp-ports", "20000-31999"],
    )
    .await?;
    let key = srv.account("voice", "100000000.00").await?;
    let number = prepare(&srv, &key).await?;
    let dir = tempfile::tempdir()?;
    let scenario = caller_scenario(dir.path(), "+447700900999", hold_secs * 1000)?;
    println!(
        "voice over SIP (SIPp with RTP on loopback, scenario: answer, play a looping file, gather; calls held {hold_secs} s, placed at up to {cps}/s)"
    );
    let mut best: Option<Level> = None;
    for &n in levels {
        let level = one_level(&srv, &scenario, &listen, &number, n, hold_secs, cps).await?;
        println!(
            "  {n} calls: set up at {:.0} calls/s; RTP {:.0} packets/s out, {:.0} in; {:.3}% late or lost; server CPU {:.2} ms per call per second ({:.1}% of a core per 100 calls){}",
            level.setup_rate,
            level.pps.0,
            level.pps.1,
            level.bad_share * 100.0,
            level.cpu_per_call,
            level.cpu_per_call * 10.0,
            if level.ok {
                ""
            } else {
                " — SIPp reported failed calls"
            }
        );
        let good = level.ok && level.bad_share < 0.01;
        if !good {
            break;
        }
        best = Some(level);
    }
    match best {
        Some(b) => println!(
            "  most calls held with under 1% of packets late or lost: {} (set up at {:.0} calls/s, {:.2} ms of server CPU per call per second)",
            b.calls, b.setup_rate, b.cpu_per_call
        ),
        None => println!("  no level held its calls with under 1% of packets late or lost"),
    }
    srv.stop().await?;
    Ok(())
}

/// `n` calls: placed, held, measured, hung up.
async fn one_level(
    srv: &server::Server,
    scenario: &std::path::Path,
    listen: &str,
    number: &str,
    n: usize,
    hold_secs: u64,
    cps: usize,
) -> anyhow::Result<Level> {
    let port = free_port()?;
    let before_calls = media(srv).await?["calls"].as_u64().unwrap_or(0);
    let started = Instant::now();
    let mut sipp = tokio::process::Command::new("sipp")
        .arg(listen)
        .arg("-sf")
        .arg(scenario)
        .args(["-s", number, "-i", "127.0.0.1", "-p", &port.to_string()])
        .args([
            "-r",
            &cps.to_string(),
            "-l",
            &n.to_string(),
            "-m",
            &n.to_string(),
        ])
        .args(["-nostdin", "-timeout", &format!("{}s", hold_secs + 120)])
        .args(["-max_socket", "60000"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()?;
    // Every call up.
    let mut up_after = None;
    while started.elapsed() < Duration::from_secs(hold_secs) {
        let calls = media(srv).await?["calls"].as_u64().unwrap_or(0);
        if calls >= before_calls + n as u64 {
            up_after = Some(started.elapsed());
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let Some(up_after) = up_after else {
        let _ = sipp.kill().await;
        return Ok(Level {
            calls: n,
            pps: (0.0, 0.0),
            setup_rate: 0.0,
            bad_share: 1.0,
            cpu_per_call: 0.0,
            ok: false,
        });
    };
    // Let the jitter buffers fill, then a window of about half the rest of the hold.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let window = Duration::from_secs(hold_secs.saturating_sub(up_after.as_secs() + 3).max(2) / 2);
    let (m0, cpu0, t0) = (
        media(srv).await?["media"].clone(),
        srv.cpu_ms()?,
        Instant::now(),
    );
    tokio::time::sleep(window).await;
    let (m1, cpu1, secs) = (
        media(srv).await?["media"].clone(),
        srv.cpu_ms()?,
        t0.elapsed().as_secs_f64(),
    );
    let delta = |k: &str| {
        m1[k]
            .as_u64()
            .unwrap_or(0)
            .saturating_sub(m0[k].as_u64().unwrap_or(0)) as f64
    };
    let all = delta("packetsSent") + delta("packetsReceived");
    let bad = delta("packetsSentLate") + delta("packetsLost") + delta("packetsLate");
    let status = tokio::time::timeout(Duration::from_secs(hold_secs + 180), sipp.wait()).await??;
    // The calls end; the next level starts from none.
    for _ in 0..600 {
        if media(srv).await?["calls"].as_u64().unwrap_or(0) <= before_calls {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(Level {
        calls: n,
        pps: (delta("packetsSent") / secs, delta("packetsReceived") / secs),
        setup_rate: n as f64 / up_after.as_secs_f64(),
        bad_share: if all > 0.0 { bad / all } else { 1.0 },
        cpu_per_call: (cpu1 - cpu0) / secs / n as f64,
        ok: status.success(),
    })
}
