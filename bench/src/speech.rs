//! Speech on a release server (`--only speech`): audio files made from text by each engine
//! (synthesis time per second of audio, from the server's counters, and how soon a file is
//! ready after its `PUT`), a minute of the neural voice's speech left as a sandbox voicemail
//! and transcribed (time per minute of audio, words recovered), and `say` on SIP calls placed
//! by SIPp: how soon a prompt's first audio is queued on the call, when its first sentence
//! must be synthesized and when it comes from the cache. The reference beside them is real
//! time (a second of audio per second) and the 300 ms the first audio must start within.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::{load, server, voice};

/// Texts of a few seconds each, all different (nothing comes from the cache).
const TEXTS: [&str; 10] = [
    "Thank you for calling. Your call is important to us.",
    "Our offices are open from nine in the morning until six in the evening.",
    "Please enter your account number, followed by the hash key.",
    "To speak to a member of our sales team, press one.",
    "For technical support, press two. For billing questions, press three.",
    "All of our agents are busy at the moment. Please stay on the line.",
    "You can also reach us by email, or visit our website for answers.",
    "Your parcel was delivered this morning and signed for at the front desk.",
    "Your appointment is confirmed for Tuesday at half past two in the afternoon.",
    "We could not find that number. Please check it and try again.",
];

/// About a minute of speech, for the transcription.
const MINUTE: &str = "Hello, this is Sarah from the dental practice on Station Road. I am calling \
    about your appointment next Thursday at ten in the morning. Doctor Patel has had to move \
    her clinic to the afternoon, so we would like to offer you a new time at half past two on \
    the same day. If that suits you, there is nothing you need to do, and we will send you a \
    reminder the day before. If it does not suit you, please call us back on the main number \
    and ask for the reception desk, and we will find another day that works for you. Please \
    remember to bring a list of any medicines you are taking, and arrive ten minutes early so \
    that we can update your details. We have also received the results of your blood test \
    from the hospital, and the doctor would like to go through them with you at the same \
    visit. There is no need to worry, as this is a routine check, but it would help if you \
    could avoid eating anything for two hours before you come in. Parking at the practice is \
    limited, so you may prefer to use the car park behind the library, which is free for the \
    first hour. Thank you, and have a lovely afternoon.";

/// Calls of each first-audio phase.
const CALLS: usize = 20;

/// The server's counters (`/metrics`), by sample name.
async fn counters(srv: &server::Server) -> anyhow::Result<HashMap<String, u64>> {
    let (status, body) = load::raw(&srv.base, "GET", "/metrics", "", None).await?;
    anyhow::ensure!(status == 200, "/metrics: {status}");
    Ok(String::from_utf8_lossy(&body)
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let (name, value) = l.split_once(' ')?;
            Some((name.to_owned(), value.trim().parse().ok()?))
        })
        .collect())
}

/// A counter's growth from `before` to `after`.
fn grew(before: &HashMap<String, u64>, after: &HashMap<String, u64>, name: &str) -> u64 {
    let get = |m: &HashMap<String, u64>| m.get(name).copied().unwrap_or(0);
    get(after).saturating_sub(get(before))
}

/// Polls `path` until `done` says so (a 2 minute bound); the last answer.
async fn until(
    srv: &server::Server,
    key: &str,
    path: &str,
    done: impl Fn(&Value) -> bool,
) -> anyhow::Result<Value> {
    let started = Instant::now();
    loop {
        let v = srv.get(key, path).await?;
        if done(&v) {
            return Ok(v);
        }
        anyhow::ensure!(
            started.elapsed() < Duration::from_secs(120),
            "{path} not done: {v}"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// An audio file of `text` spoken by `voice`, ready: its sid and how long it took.
async fn spoken(
    srv: &server::Server,
    key: &str,
    text: &str,
    voice: &str,
) -> anyhow::Result<(String, Duration)> {
    let file = srv
        .post(key, "/v2.0/audio-files", &json!({"name": "bench"}))
        .await?;
    let sid = file["sid"].as_str().unwrap_or_default().to_owned();
    let started = Instant::now();
    let (status, v) = load::once_key(
        &srv.base,
        "PUT",
        &format!("/v2.0/audio-files/{sid}/tts"),
        key,
        Some(&json!({"text": text, "voice": voice}).to_string()),
    )
    .await?;
    anyhow::ensure!(status == 202, "tts: {status} {v}");
    let file = until(srv, key, &format!("/v2.0/audio-files/{sid}"), |v| {
        v["status"] != "pending-conversion" && v["status"] != "processing"
    })
    .await?;
    anyhow::ensure!(file["status"] == "ready", "not spoken: {file}");
    Ok((sid, started.elapsed()))
}

/// The synthesis figures of one voice.
async fn synthesis(
    srv: &server::Server,
    key: &str,
    voice: &str,
    engine: &str,
) -> anyhow::Result<()> {
    // The first use starts the engine (the neural voice loads its model).
    let (_, first) = spoken(srv, key, "Warming up.", voice).await?;
    let before = counters(srv).await?;
    let mut ready = Vec::new();
    for text in TEXTS {
        ready.push(spoken(srv, key, text, voice).await?.1);
    }
    let after = counters(srv).await?;
    let took = grew(
        &before,
        &after,
        &format!("dialtone_speech_{engine}_synthesis_milliseconds_total"),
    );
    let audio = grew(
        &before,
        &after,
        &format!("dialtone_speech_{engine}_audio_milliseconds_total"),
    );
    ready.sort();
    println!(
        "  {engine} ({voice}): {} texts, {:.1} s of audio synthesized in {:.2} s = {:.0} ms per second of audio ({:.0}x real time); a file ready {:.0} ms after its PUT (median); first use {:.0} ms",
        TEXTS.len(),
        audio as f64 / 1000.0,
        took as f64 / 1000.0,
        took as f64 * 1000.0 / audio.max(1) as f64,
        audio as f64 / took.max(1) as f64,
        ready[ready.len() / 2].as_secs_f64() * 1000.0,
        first.as_secs_f64() * 1000.0,
    );
    Ok(())
}

/// A number of the account answered by `script`.
async fn line(srv: &server::Server, key: &str, script: &str) -> anyhow::Result<String> {
    let number = srv.buy_number(key).await?;
    let scenario = srv
        .post(
            key,
            "/v2.0/actions",
            &json!({"name": "speech", "script": script}),
        )
        .await?;
    let sid = scenario["sid"].as_str().unwrap_or_default();
    let (status, _) = load::once_key(
        &srv.base,
        "PUT",
        &format!("/v2.0/actions/{sid}/numbers/{number}"),
        key,
        None,
    )
    .await?;
    anyhow::ensure!(status == 204, "attach: {status}");
    Ok(number)
}

/// A minute of the neural voice left as a voicemail on a sandbox call, transcribed.
async fn transcription(srv: &server::Server, key: &str) -> anyhow::Result<()> {
    let (file, _) = spoken(srv, key, MINUTE, "TTS_EN-US_JOE").await?;
    let (status, wav) = load::raw(
        &srv.base,
        "GET",
        &format!("/v2.0/audio-files/{file}/file"),
        key,
        None,
    )
    .await?;
    anyhow::ensure!(status == 200, "download: {status}");
    let number = line(srv, key, "branches:\n  inbound-call:\n    actions:\n      - action: record@v1\n        params: { maxDuration: 300, transcription: { language: en-US } }\n      - action: hangup@v1\n").await?;
    let call = srv
        .post(
            key,
            "/sandbox/calls",
            &json!({"from": "+447700900999", "to": number}),
        )
        .await?;
    let callid = call["callid"].as_str().unwrap_or_default();
    let before = counters(srv).await?;
    let started = Instant::now();
    let (status, _) = load::raw(
        &srv.base,
        "POST",
        &format!("/sandbox/calls/{callid}/audio"),
        key,
        Some(("audio/wav", wav)),
    )
    .await?;
    anyhow::ensure!(status == 200, "voicemail: {status}");
    let page = until(srv, key, "/v2.0/recordings?limit=1", |v| {
        v["hits"][0]["transcription"]["status"]
            .as_str()
            .is_some_and(|s| s != "pending")
    })
    .await?;
    let wall = started.elapsed();
    let after = counters(srv).await?;
    let recording = &page["hits"][0];
    let transcript = recording["transcript"]
        .as_str()
        .unwrap_or_default()
        .to_ascii_lowercase();
    let words: Vec<String> = MINUTE
        .split_whitespace()
        .map(|w| {
            w.trim_matches(|c: char| !c.is_alphanumeric())
                .to_ascii_lowercase()
        })
        .filter(|w| !w.is_empty())
        .collect();
    let heard: Vec<&str> = transcript
        .split_whitespace()
        .map(|w| w.trim_matches(|c: char| !c.is_alphanumeric()))
        .collect();
    let recovered = words.iter().filter(|w| heard.contains(&w.as_str())).count();
    let took = grew(&before, &after, "dialtone_transcription_milliseconds_total");
    let audio = grew(
        &before,
        &after,
        "dialtone_transcribed_audio_milliseconds_total",
    );
    println!(
        "  transcription (Whisper tiny.en, one core): {:.1} s of speech in {:.2} s = {:.1} s per minute of audio (the transcriber's start and model load included); ready {:.2} s after the voicemail was left; {:.0}% of the words recovered ({})",
        audio as f64 / 1000.0,
        took as f64 / 1000.0,
        took as f64 * 60.0 / audio.max(1) as f64,
        wall.as_secs_f64(),
        recovered as f64 * 100.0 / words.len().max(1) as f64,
        recording["transcription"]["status"],
    );
    Ok(())
}

/// `CALLS` calls by SIPp to `number`, one a second, two at once, each held 3 s.
async fn calls(listen: &str, number: &str, from: &str) -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let scenario = voice::caller_scenario(dir.path(), from, 3_000)?;
    let port = voice::free_port()?;
    let mut sipp = tokio::process::Command::new("sipp")
        .arg(listen)
        .arg("-sf")
        .arg(&scenario)
        .args(["-s", number, "-i", "127.0.0.1", "-p", &port.to_string()])
        .args(["-r", "1", "-l", "2", "-m", &CALLS.to_string()])
        .args(["-nostdin", "-timeout", "120s"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()?;
    let status = tokio::time::timeout(Duration::from_secs(150), sipp.wait()).await??;
    anyhow::ensure!(status.success(), "SIPp's calls failed ({status})");
    Ok(())
}

/// How soon `say` starts on SIP calls: prompts whose first piece is synthesized for each
/// call (it names the caller), then one that every call shares (from the cache after the
/// first).
async fn first_audio(srv: &server::Server, key: &str, listen: &str) -> anyhow::Result<()> {
    voice::sipp_trunk(srv).await?;
    let say = |what: &str| {
        format!(
            "branches:\n  inbound-call:\n    actions:\n      - action: say@v2\n        params: {{ what: \"{what}\" }}\n      - action: wait@v1\n        params: {{ seconds: 30 }}\n"
        )
    };
    let fresh = line(
        srv,
        key,
        &say("Caller ${{ call.fromNumber.slice(-2) }}, welcome to the benchmark line. Thank you for calling."),
    )
    .await?;
    calls(listen, &fresh, "+4477009000[call_number]").await?;
    let shared = line(
        srv,
        key,
        &say("Welcome to the benchmark line. Please hold."),
    )
    .await?;
    calls(listen, &shared, "+447700900999").await?;
    let node = voice::media(srv).await?;
    let view = &node["sayFirstAudio"];
    for (kind, what) in [
        (
            "synthesized",
            "first piece synthesized for the call (neural voice)",
        ),
        ("cached", "first piece from the cache"),
    ] {
        let s = &view[kind];
        println!(
            "  say on a SIP call, {what}: first audio queued {} ms after the say reached the node (median), p99 {} ms, max {} ms, {} prompts (target: 300 ms)",
            s["p50Ms"], s["p99Ms"], s["maxMs"], s["count"]
        );
    }
    Ok(())
}

/// Runs the speech benchmark.
pub(crate) async fn run(binary: &std::path::Path) -> anyhow::Result<()> {
    let listen = format!("127.0.0.1:{}", voice::free_port()?);
    let mut srv = server::Server::start_with(
        binary,
        None,
        &["--sip-listen", &listen, "--rtp-ports", "32000-32999"],
    )
    .await?;
    let key = srv.account("speech", "1000000.00").await?;
    println!("speech (reference: real time, a second of audio per second)");
    synthesis(&srv, &key, "TTS_EN-GB_SERENA", "espeak").await?;
    synthesis(&srv, &key, "TTS_EN-US_JOE", "neural").await?;
    transcription(&srv, &key).await?;
    first_audio(&srv, &key, &listen).await?;
    srv.stop().await?;
    Ok(())
}
