//! Audio files through v2.0: create, upload, conversion by the workers, the converted WAV,
//! search, limits, events, recording by phone, and JSON-RPC media/library.*.

use dialtone::testing::LEASE_MS;
use dialtone::testing::phone_recording;
use dialtone_domain::E164;
use reqwest::Method;
use serde_json::{Value, json};

use crate::both_backends;
use crate::helpers::{START, TestAccount, TestApp, assert_error, send};
use crate::jsonrpc::rpc;

both_backends!(
    audio_create_get_patch_delete,
    audio_bad_input,
    audio_upload_converts_via_tick,
    audio_every_format_converts,
    audio_png_as_wav_ends_in_error,
    audio_size_and_duration_limits,
    audio_put_file,
    audio_search,
    audio_cross_account_404,
    audio_conversion_resumes_after_crash,
    audio_phone_recording,
    audio_json_rpc,
);

fn fixture(name: &str) -> Vec<u8> {
    let path = format!(
        "{}/../media/tests/fixtures/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// A part of a multipart body: name, content type (a file part when given), bytes.
pub(crate) type Part<'a> = (&'a str, Option<&'a str>, &'a [u8]);

/// A `multipart/form-data` body: (content type header, bytes).
pub(crate) fn multipart(parts: &[Part<'_>]) -> (String, Vec<u8>) {
    let boundary = "dialtone-test-boundary-7f3a";
    let mut body = Vec::new();
    for (name, content_type, bytes) in parts {
        body.extend_from_slice(format!("--{boundary}\r\n").as_bytes());
        match content_type {
            Some(ct) => body.extend_from_slice(
                format!("Content-Disposition: form-data; name=\"{name}\"; filename=\"upload\"\r\nContent-Type: {ct}\r\n\r\n")
                    .as_bytes(),
            ),
            None => body.extend_from_slice(
                format!("Content-Disposition: form-data; name=\"{name}\"\r\n\r\n").as_bytes(),
            ),
        }
        body.extend_from_slice(bytes);
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
    (format!("multipart/form-data; boundary={boundary}"), body)
}

pub(crate) async fn send_multipart(
    app: &TestApp,
    acct: &TestAccount,
    method: Method,
    path: &str,
    parts: &[Part<'_>],
) -> (reqwest::StatusCode, Value) {
    let (ct, body) = multipart(parts);
    send(
        app.req(acct, method, path)
            .header("content-type", ct)
            .body(body),
    )
    .await
}

/// Uploads a new audio file with content; returns its sid.
pub(crate) async fn upload(
    app: &TestApp,
    acct: &TestAccount,
    name: &str,
    ct: &str,
    bytes: &[u8],
) -> String {
    let (status, v) = send_multipart(
        app,
        acct,
        Method::POST,
        "/v2.0/audio-files",
        &[("name", None, name.as_bytes()), ("file", Some(ct), bytes)],
    )
    .await;
    assert_eq!(status, 202, "{v}");
    assert_eq!(v["status"], "pending-conversion", "{v}");
    v["sid"].as_str().expect("sid").to_owned()
}

pub(crate) async fn get(app: &TestApp, acct: &TestAccount, sid: &str) -> Value {
    let (status, v) = send(app.req(acct, Method::GET, &format!("/v2.0/audio-files/{sid}"))).await;
    assert_eq!(status, 200, "{v}");
    v
}

/// Runs the workers until nothing is left to do.
pub(crate) async fn drain(app: &TestApp) {
    for _ in 0..20 {
        if app.tick().await == 0 {
            return;
        }
    }
    panic!("work never ran out");
}

fn statuses(events: &[Value], hash: &str) -> Vec<String> {
    events
        .iter()
        .filter(|e| e["hash"] == hash)
        .map(|e| e["status"].as_str().unwrap_or_default().to_owned())
        .collect()
}

async fn audio_create_get_patch_delete(app: TestApp) {
    let acct = app.account().await;
    let (status, v) = send(
        app.req(&acct, Method::POST, "/v2.0/audio-files")
            .json(&json!({"name": "Welcome"})),
    )
    .await;
    assert_eq!(status, 201, "{v}");
    assert_eq!(v["status"], "pending-content");
    assert_eq!(v["name"], "Welcome");
    assert_eq!(v["source"], Value::Null);
    assert_eq!(v["duration"], Value::Null);
    assert_eq!(v["created"], "2025-06-01T12:00:00.000Z");
    let sid = v["sid"].as_str().expect("sid").to_owned();
    assert_eq!(sid.len(), 8);

    assert_eq!(get(&app, &acct, &sid).await["name"], "Welcome");
    app.clock.advance_ms(1000);
    let (status, v) = send(
        app.req(&acct, Method::PATCH, &format!("/v2.0/audio-files/{sid}"))
            .json(&json!({"name": "Hello"})),
    )
    .await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["name"], "Hello");
    assert_eq!(v["updated"], "2025-06-01T12:00:01.000Z");

    // Only the name is updatable.
    let (status, v) = send(
        app.req(&acct, Method::PATCH, &format!("/v2.0/audio-files/{sid}"))
            .json(&json!({"name": "x", "status": "ready"})),
    )
    .await;
    assert_eq!(
        assert_error(status, &v, 400, "validation_error"),
        ["status"]
    );
    let (status, v) = send(
        app.req(&acct, Method::PATCH, &format!("/v2.0/audio-files/{sid}"))
            .json(&json!({})),
    )
    .await;
    assert_eq!(assert_error(status, &v, 400, "validation_error"), ["name"]);

    let (status, _) =
        send(app.req(&acct, Method::GET, &format!("/v2.0/audio-files/{sid}/file"))).await;
    assert_eq!(status, 404, "no content yet");

    let (status, v) =
        send(app.req(&acct, Method::DELETE, &format!("/v2.0/audio-files/{sid}"))).await;
    assert_eq!(status, 204, "{v}");
    let (status, v) = send(app.req(&acct, Method::GET, &format!("/v2.0/audio-files/{sid}"))).await;
    assert_error(status, &v, 404, "not_found");
    let (status, v) =
        send(app.req(&acct, Method::DELETE, &format!("/v2.0/audio-files/{sid}"))).await;
    assert_error(status, &v, 404, "not_found");
    let (status, v) = send(app.req(&acct, Method::GET, "/v2.0/audio-files/NOTASID")).await;
    assert_error(status, &v, 404, "not_found");

    let events = app.events(&acct.sid, "media.library.status_update").await;
    assert_eq!(statuses(&events, &sid.to_uppercase()), ["PENDING_CONTENT"]);

    // Every route is in the OpenAPI document, with both create bodies.
    let (status, doc) = send(app.anon(Method::GET, "/v2.0/openapi.json")).await;
    assert_eq!(status, 200);
    for path in [
        "/audio-files",
        "/audio-files/{sid}",
        "/audio-files/{sid}/file",
        "/audio-files/{sid}/phone-id",
    ] {
        assert!(doc["paths"][path].is_object(), "{path} missing");
    }
    let create = &doc["paths"]["/audio-files"]["post"]["requestBody"]["content"];
    assert!(create["application/json"].is_object(), "{create}");
    assert!(create["multipart/form-data"].is_object(), "{create}");
}

async fn audio_bad_input(app: TestApp) {
    let acct = app.account().await;
    let post = |body: Value| {
        app.req(&acct, Method::POST, "/v2.0/audio-files")
            .json(&body)
    };
    let (status, v) = send(post(json!({"name": "a", "file": "abc"}))).await;
    assert_eq!(assert_error(status, &v, 400, "validation_error"), ["file"]);
    let (status, v) = send(post(json!({}))).await;
    assert_eq!(assert_error(status, &v, 400, "validation_error"), ["name"]);
    let (status, v) = send(post(json!({"name": ""}))).await;
    assert_eq!(assert_error(status, &v, 400, "validation_error"), ["name"]);
    let (status, v) = send(post(json!({"name": "x".repeat(65)}))).await;
    assert_eq!(assert_error(status, &v, 400, "validation_error"), ["name"]);
    let (status, v) = send(
        app.req(&acct, Method::POST, "/v2.0/audio-files")
            .header("content-type", "application/json")
            .body("{"),
    )
    .await;
    assert_error(status, &v, 400, "invalid_json");

    let wav = fixture("tone1k.wav");
    let path = "/v2.0/audio-files";
    // Multipart: name is required, unknown parts are refused, each part once.
    let (status, v) = send_multipart(
        &app,
        &acct,
        Method::POST,
        path,
        &[("file", Some("audio/wav"), &wav)],
    )
    .await;
    assert_eq!(assert_error(status, &v, 400, "validation_error"), ["name"]);
    let (status, v) = send_multipart(
        &app,
        &acct,
        Method::POST,
        path,
        &[("name", None, b"a"), ("tags", None, b"x")],
    )
    .await;
    assert_eq!(assert_error(status, &v, 400, "validation_error"), ["tags"]);
    let (status, v) = send_multipart(
        &app,
        &acct,
        Method::POST,
        path,
        &[("name", None, b"a"), ("name", None, b"b")],
    )
    .await;
    assert_eq!(assert_error(status, &v, 400, "validation_error"), ["name"]);
    // A declared type that is not a supported audio type.
    let (status, v) = send_multipart(
        &app,
        &acct,
        Method::POST,
        path,
        &[
            ("name", None, b"a"),
            ("file", Some("image/png"), &fixture("not-audio.png")),
        ],
    )
    .await;
    assert_error(status, &v, 400, "unsupported_format");
    let (status, v) = send_multipart(
        &app,
        &acct,
        Method::POST,
        path,
        &[("name", None, b"a"), ("file", Some("audio/wav"), b"")],
    )
    .await;
    assert_eq!(assert_error(status, &v, 400, "validation_error"), ["file"]);
    // Unknown query parameters.
    let (status, v) = send(
        app.req(&acct, Method::POST, "/v2.0/audio-files?bogus=1")
            .json(&json!({"name": "a"})),
    )
    .await;
    assert_eq!(assert_error(status, &v, 400, "validation_error"), ["bogus"]);

    // Nothing was stored by the refused requests.
    let (_, v) = send(app.req(&acct, Method::GET, "/v2.0/audio-files?limit=100")).await;
    assert_eq!(v["total"], 0, "{v}");

    // Multipart with a name and no file: created without content.
    let (status, v) = send_multipart(
        &app,
        &acct,
        Method::POST,
        path,
        &[("name", None, "Ünïcode".as_bytes())],
    )
    .await;
    assert_eq!(status, 201, "{v}");
    assert_eq!(v["status"], "pending-content");
    assert_eq!(v["name"], "Ünïcode");
}

async fn audio_upload_converts_via_tick(app: TestApp) {
    let acct = app.account().await;
    let flac = fixture("tone1k.flac");
    let (status, v) = send_multipart(
        &app,
        &acct,
        Method::POST,
        "/v2.0/audio-files",
        &[("name", None, b"tone"), ("file", Some("audio/flac"), &flac)],
    )
    .await;
    assert_eq!(status, 202, "{v}");
    assert_eq!(v["status"], "pending-conversion");
    assert_eq!(v["source"], "upload");
    assert_eq!(v["contentType"], "audio/flac");
    assert_eq!(v["size"], flac.len());
    assert_eq!(v["duration"], Value::Null);
    let sid = v["sid"].as_str().expect("sid").to_owned();

    let (status, _) =
        send(app.req(&acct, Method::GET, &format!("/v2.0/audio-files/{sid}/file"))).await;
    assert_eq!(status, 404, "not ready yet");

    app.clock.advance_ms(10);
    assert_eq!(app.tick().await, 1);
    let v = get(&app, &acct, &sid).await;
    assert_eq!(v["status"], "ready", "{v}");
    let duration = v["duration"].as_i64().expect("duration");
    assert!((250..=350).contains(&duration), "{v}");
    assert_eq!(v["error"], Value::Null);
    assert_eq!(app.tick().await, 0, "nothing left");

    let resp = app
        .req(&acct, Method::GET, &format!("/v2.0/audio-files/{sid}/file"))
        .send()
        .await
        .expect("GET file");
    assert_eq!(resp.status(), 200);
    assert_eq!(
        resp.headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok()),
        Some("audio/wav")
    );
    let wav = resp.bytes().await.expect("body");
    let (rate, channels, ms) = dialtone_media::wav_info(&wav).expect("a WAV file");
    assert_eq!((rate, channels), (8000, 1));
    assert_eq!(ms as i64, duration);
    assert_eq!(&wav[34..36], &[16, 0], "16-bit");
    // Still a 1 kHz tone: about 2000 zero crossings per second.
    let samples = dialtone_media::wav_samples(&wav).expect("samples");
    let middle = &samples[samples.len() / 5..samples.len() * 4 / 5];
    let crossings = middle
        .windows(2)
        .filter(|w| (w[0] < 0) != (w[1] < 0))
        .count();
    let per_second = crossings as f64 * 8000.0 / middle.len() as f64;
    assert!((per_second - 2000.0).abs() < 100.0, "{per_second}");

    let events = app.events(&acct.sid, "media.library.status_update").await;
    let hash = sid.to_uppercase();
    assert_eq!(
        statuses(&events, &hash),
        [
            "PENDING_CONTENT",
            "PENDING_CONVERSION",
            "PROCESSING",
            "READY"
        ]
    );
    let last = events.last().expect("event");
    assert_eq!(last["name"], "tone");
    assert_eq!(last["duration"], 0, "{last}");
}

async fn audio_every_format_converts(app: TestApp) {
    let acct = app.account().await;
    let cases = [
        ("tone1k.wav", "audio/wav"),
        ("tone1k.flac", "audio/flac"),
        ("tone1k.mp3", "audio/mpeg"),
        ("tone1k.m4a", "audio/mp4"),
        ("tone1k.ogg", "audio/ogg"),
        ("tone1k.opus", "audio/ogg"),
    ];
    let mut sids = Vec::new();
    for (file, ct) in cases {
        sids.push((file, upload(&app, &acct, file, ct, &fixture(file)).await));
    }
    drain(&app).await;
    for (file, sid) in sids {
        let v = get(&app, &acct, &sid).await;
        assert_eq!(v["status"], "ready", "{file}: {v}");
        let ms = v["duration"].as_i64().expect("duration");
        assert!((ms - 300).abs() <= 50, "{file}: {ms} ms");
        let wav = app
            .req(&acct, Method::GET, &format!("/v2.0/audio-files/{sid}/file"))
            .send()
            .await
            .expect("GET file")
            .bytes()
            .await
            .expect("body");
        let (rate, channels, _) = dialtone_media::wav_info(&wav).expect("wav");
        assert_eq!((rate, channels), (8000, 1), "{file}");
    }
}

async fn audio_png_as_wav_ends_in_error(app: TestApp) {
    let acct = app.account().await;
    let sid = upload(&app, &acct, "png", "audio/wav", &fixture("not-audio.png")).await;
    drain(&app).await;
    let v = get(&app, &acct, &sid).await;
    assert_eq!(v["status"], "error", "{v}");
    let error = v["error"].as_str().expect("error");
    assert!(error.starts_with("not audio"), "{error}");
    assert_eq!(v["duration"], Value::Null);
    let (status, v) =
        send(app.req(&acct, Method::GET, &format!("/v2.0/audio-files/{sid}/file"))).await;
    assert_error(status, &v, 404, "not_found");
    let events = app.events(&acct.sid, "media.library.status_update").await;
    assert_eq!(
        statuses(&events, &sid.to_uppercase()),
        [
            "PENDING_CONTENT",
            "PENDING_CONVERSION",
            "PROCESSING",
            "ERROR"
        ]
    );

    // FLAC declared as WAV: the content and the declared type disagree.
    let sid = upload(&app, &acct, "flac", "audio/wav", &fixture("tone1k.flac")).await;
    drain(&app).await;
    let v = get(&app, &acct, &sid).await;
    assert_eq!(v["status"], "error", "{v}");
    assert!(
        v["error"]
            .as_str()
            .is_some_and(|e| e.starts_with("undecodable")),
        "{v}"
    );

    // No declared type: the content is sniffed.
    let sid = upload(
        &app,
        &acct,
        "sniffed",
        "application/octet-stream",
        &fixture("tone1k.mp3"),
    )
    .await;
    drain(&app).await;
    let v = get(&app, &acct, &sid).await;
    assert_eq!(v["status"], "ready", "{v}");
    assert_eq!(v["contentType"], "audio/mpeg");
}

async fn audio_size_and_duration_limits(app: TestApp) {
    let backend = app.backend;
    drop(app);
    let Some(app) = TestApp::spawn_with(backend, |c| {
        c.audio_max_bytes = 4096;
        c.audio_max_duration_ms = 100;
    })
    .await
    else {
        return;
    };
    let acct = app.account().await;
    let wav = fixture("tone1k.wav");
    assert!(wav.len() > 4096);
    let (status, v) = send_multipart(
        &app,
        &acct,
        Method::POST,
        "/v2.0/audio-files",
        &[("name", None, b"big"), ("file", Some("audio/wav"), &wav)],
    )
    .await;
    assert_error(status, &v, 400, "file_too_large");
    // Far over the limit: refused from Content-Length, before the body is read.
    let big = vec![7u8; 3 * 1024 * 1024];
    let (status, v) = send_multipart(
        &app,
        &acct,
        Method::POST,
        "/v2.0/audio-files",
        &[("name", None, b"huge"), ("file", Some("audio/wav"), &big)],
    )
    .await;
    assert_error(status, &v, 400, "file_too_large");
    let (_, v) = send(app.req(&acct, Method::GET, "/v2.0/audio-files")).await;
    assert_eq!(v["total"], 0, "nothing stored: {v}");
    assert!(
        app.events(&acct.sid, "media.library.status_update")
            .await
            .is_empty()
    );

    // PUT over the limit leaves the file as it was.
    let (_, v) = send(
        app.req(&acct, Method::POST, "/v2.0/audio-files")
            .json(&json!({"name": "small"})),
    )
    .await;
    let sid = v["sid"].as_str().expect("sid").to_owned();
    let (status, v) = send_multipart(
        &app,
        &acct,
        Method::PUT,
        &format!("/v2.0/audio-files/{sid}/file"),
        &[("file", Some("audio/wav"), &wav)],
    )
    .await;
    assert_error(status, &v, 400, "file_too_large");
    assert_eq!(get(&app, &acct, &sid).await["status"], "pending-content");

    // Under the size limit but longer than the duration limit.
    let mp3 = fixture("tone1k.mp3");
    assert!(mp3.len() <= 4096);
    let sid = upload(&app, &acct, "long", "audio/mpeg", &mp3).await;
    drain(&app).await;
    let v = get(&app, &acct, &sid).await;
    assert_eq!(v["status"], "error", "{v}");
    assert!(
        v["error"]
            .as_str()
            .is_some_and(|e| e.starts_with("too long")),
        "{v}"
    );
}

async fn audio_put_file(app: TestApp) {
    let acct = app.account().await;
    let (_, v) = send(
        app.req(&acct, Method::POST, "/v2.0/audio-files")
            .json(&json!({"name": "later"})),
    )
    .await;
    let sid = v["sid"].as_str().expect("sid").to_owned();
    let path = format!("/v2.0/audio-files/{sid}/file");

    let (status, v) = send_multipart(&app, &acct, Method::PUT, &path, &[]).await;
    assert_eq!(assert_error(status, &v, 400, "validation_error"), ["file"]);
    let (status, v) =
        send_multipart(&app, &acct, Method::PUT, &path, &[("name", None, b"x")]).await;
    assert_eq!(assert_error(status, &v, 400, "validation_error"), ["name"]);
    let (status, v) = send(
        app.req(&acct, Method::PUT, &path)
            .json(&json!({"file": "x"})),
    )
    .await;
    assert_error(status, &v, 400, "validation_error");
    let (status, v) = send_multipart(
        &app,
        &acct,
        Method::PUT,
        "/v2.0/audio-files/zzzzzzzz/file",
        &[("file", Some("audio/wav"), &fixture("tone1k.wav"))],
    )
    .await;
    assert_error(status, &v, 404, "not_found");

    let (status, v) = send_multipart(
        &app,
        &acct,
        Method::PUT,
        &path,
        &[("file", Some("audio/ogg"), &fixture("tone1k.ogg"))],
    )
    .await;
    assert_eq!(status, 202, "{v}");
    assert_eq!(v["status"], "pending-conversion");
    assert_eq!(v["contentType"], "audio/ogg");
    drain(&app).await;
    assert_eq!(get(&app, &acct, &sid).await["status"], "ready");

    // New content of a ready file: converted again.
    let (status, v) = send_multipart(
        &app,
        &acct,
        Method::PUT,
        &path,
        &[("file", Some("audio/wav"), &fixture("not-audio.png"))],
    )
    .await;
    assert_eq!(status, 202, "{v}");
    assert_eq!(v["duration"], Value::Null);
    let (status, _) = send(app.req(&acct, Method::GET, &path)).await;
    assert_eq!(
        status, 404,
        "the old conversion is gone with the old content"
    );
    drain(&app).await;
    assert_eq!(get(&app, &acct, &sid).await["status"], "error");
}

async fn audio_search(app: TestApp) {
    let acct = app.account().await;
    for name in ["Welcome EN", "welcome FR", "Goodbye", "Hold music"] {
        let (status, _) = send(
            app.req(&acct, Method::POST, "/v2.0/audio-files")
                .json(&json!({"name": name})),
        )
        .await;
        assert_eq!(status, 201);
        app.clock.advance_ms(1000);
    }
    upload(
        &app,
        &acct,
        "Uploaded welcome",
        "audio/wav",
        &fixture("tone1k.wav"),
    )
    .await;
    drain(&app).await;

    let names = |v: &Value| -> Vec<String> {
        v["hits"]
            .as_array()
            .expect("hits")
            .iter()
            .map(|h| h["name"].as_str().unwrap_or_default().to_owned())
            .collect()
    };
    let search = |q: &str| send(app.req(&acct, Method::GET, &format!("/v2.0/audio-files{q}")));

    let (status, v) = search("").await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["total"], 5);
    assert_eq!(v["offset"], 0);
    assert_eq!(v["hasMore"], false);
    assert_eq!(
        names(&v)[0],
        "Uploaded welcome",
        "default sort: updated desc"
    );

    let (_, v) = search("?name=WELCOME&sort=name&order=asc").await;
    assert_eq!(names(&v), ["Uploaded welcome", "Welcome EN", "welcome FR"]);
    let (_, v) = search("?status=ready").await;
    assert_eq!(names(&v), ["Uploaded welcome"]);
    let (_, v) = search("?source=upload").await;
    assert_eq!(v["total"], 1);
    let (_, v) = search("?source=phone").await;
    assert_eq!(v["total"], 0);
    let (_, v) = search("?source=tts").await;
    assert_eq!(v["total"], 0);
    let (_, v) = search("?status=pending-content&sort=created&order=asc&limit=2&offset=1").await;
    assert_eq!(names(&v), ["welcome FR", "Goodbye"]);
    assert_eq!(v["hasMore"], true);

    for (q, param) in [
        ("?name=", "name"),
        (&format!("?name={}", "a".repeat(65)), "name"),
        ("?status=done", "status"),
        ("?source=speech", "source"),
        ("?sort=duration", "sort"),
        ("?limit=101", "limit"),
        ("?bogus=1", "bogus"),
    ] {
        let (status, v) = search(q).await;
        assert_eq!(
            assert_error(status, &v, 400, "validation_error"),
            [param],
            "{q}"
        );
    }
}

async fn audio_cross_account_404(app: TestApp) {
    let a = app.account().await;
    let b = app.account().await;
    let sid = upload(&app, &a, "mine", "audio/wav", &fixture("tone1k.wav")).await;
    drain(&app).await;
    let wav = fixture("tone1k.wav");
    for (method, path) in [
        (Method::GET, format!("/v2.0/audio-files/{sid}")),
        (Method::DELETE, format!("/v2.0/audio-files/{sid}")),
        (Method::GET, format!("/v2.0/audio-files/{sid}/file")),
        (
            Method::PUT,
            format!("/v2.0/audio-files/{sid}/phone-id?country=GB"),
        ),
    ] {
        let (status, v) = send(app.req(&b, method.clone(), &path)).await;
        assert_error(status, &v, 404, "not_found");
    }
    let (status, v) = send(
        app.req(&b, Method::PATCH, &format!("/v2.0/audio-files/{sid}"))
            .json(&json!({"name": "theirs"})),
    )
    .await;
    assert_error(status, &v, 404, "not_found");
    let (status, v) = send_multipart(
        &app,
        &b,
        Method::PUT,
        &format!("/v2.0/audio-files/{sid}/file"),
        &[("file", Some("audio/wav"), &wav)],
    )
    .await;
    assert_error(status, &v, 404, "not_found");
    let (_, v) = send(app.req(&b, Method::GET, "/v2.0/audio-files")).await;
    assert_eq!(v["total"], 0);
    let v = get(&app, &a, &sid).await;
    assert_eq!(v["name"], "mine");
    assert_eq!(v["status"], "ready");
}

async fn audio_conversion_resumes_after_crash(app: TestApp) {
    use dialtone_store::audio_files;
    let acct = app.account().await;
    let sid = upload(&app, &acct, "crash", "audio/wav", &fixture("tone1k.wav")).await;
    // A worker claims the job, moves the file to processing, then dies.
    let now = dialtone_domain::Clock::now(&app.clock);
    let claimed = app
        .state
        .store
        .write(move |c| {
            let claimed = audio_files::claim_conversions(c, now, LEASE_MS, 10, &[], &mut |_| true)?;
            for job in &claimed {
                if let Some(file) =
                    audio_files::start_processing(c, job.audio_file_id, job.revision, now)?
                {
                    dialtone::testing::emit_status(c, "http://127.0.0.1", &file, now)?;
                }
            }
            Ok::<_, dialtone_store::DbError>(claimed)
        })
        .await
        .expect("claim");
    assert_eq!(claimed.len(), 1);
    assert_eq!(get(&app, &acct, &sid).await["status"], "processing");
    // Leased: nobody else takes it.
    app.clock.advance_ms(LEASE_MS - 1);
    assert_eq!(app.tick().await, 0);
    assert_eq!(get(&app, &acct, &sid).await["status"], "processing");
    // The lease runs out: another worker resumes it.
    app.clock.advance_ms(2);
    assert_eq!(app.tick().await, 1);
    assert_eq!(get(&app, &acct, &sid).await["status"], "ready");
    let events = app.events(&acct.sid, "media.library.status_update").await;
    assert_eq!(
        statuses(&events, &sid.to_uppercase()),
        [
            "PENDING_CONTENT",
            "PENDING_CONVERSION",
            "PROCESSING",
            "READY"
        ]
    );
    // The dead worker's late result is discarded.
    let stale = claimed[0].clone();
    let later = dialtone_domain::Clock::now(&app.clock);
    let outcome = audio_files::Outcome::Failed("late".into());
    let result = app
        .state
        .store
        .write(move |c| audio_files::finish_conversion(c, &stale, &outcome, later))
        .await
        .expect("finish");
    assert_eq!(result, None);
    assert_eq!(get(&app, &acct, &sid).await["status"], "ready");

    // Content whose conversion never finishes (its workers keep dying) ends in error.
    let sid = upload(&app, &acct, "poison", "audio/wav", &fixture("tone1k.wav")).await;
    for _ in 0..dialtone::testing::MAX_ATTEMPTS {
        let now = dialtone_domain::Clock::now(&app.clock);
        let claimed = app
            .state
            .store
            .write(move |c| {
                audio_files::claim_conversions(c, now, LEASE_MS, 10, &[], &mut |_| true)
            })
            .await
            .expect("claim");
        assert_eq!(claimed.len(), 1);
        app.clock.advance_ms(LEASE_MS + 1);
    }
    assert_eq!(app.tick().await, 1);
    let v = get(&app, &acct, &sid).await;
    assert_eq!(v["status"], "error", "{v}");
    assert!(
        v["error"]
            .as_str()
            .is_some_and(|e| e.starts_with("undecodable")),
        "{v}"
    );
}

async fn audio_phone_recording(app: TestApp) {
    let acct = app.account().await;
    let (_, v) = send(
        app.req(&acct, Method::POST, "/v2.0/audio-files")
            .json(&json!({"name": "by phone"})),
    )
    .await;
    let sid = v["sid"].as_str().expect("sid").to_owned();
    let path = format!("/v2.0/audio-files/{sid}/phone-id");

    let (status, v) = send(app.req(&acct, Method::PUT, &format!("{path}?country=GB"))).await;
    assert_eq!(status, 201, "{v}");
    let number = v["phoneNumber"].as_str().expect("phoneNumber").to_owned();
    assert!(number.starts_with("+44"), "{v}");
    let code = v["code"].as_str().expect("code").to_owned();
    assert!(
        code.len() == 8 && code.bytes().all(|b| b.is_ascii_digit()),
        "{v}"
    );
    assert_eq!(v["expires"], "2025-06-01T12:10:00.000Z");

    // No number in Belgium: the closest country that has one (France).
    let (status, v) = send(app.req(&acct, Method::PUT, &format!("{path}?country=be"))).await;
    assert_eq!(status, 201, "{v}");
    assert!(
        v["phoneNumber"]
            .as_str()
            .is_some_and(|n| n.starts_with("+33")),
        "{v}"
    );

    for q in ["", "?country=", "?country=GBR", "?country=GB&x=1"] {
        let (status, v) = send(app.req(&acct, Method::PUT, &format!("{path}{q}"))).await;
        assert_error(status, &v, 400, "validation_error");
    }
    let (status, v) = send(app.req(
        &acct,
        Method::PUT,
        "/v2.0/audio-files/zzzzzzzz/phone-id?country=GB",
    ))
    .await;
    assert_error(status, &v, 404, "not_found");

    // The calls engine hands over what the caller recorded.
    let called = E164::parse(&number).expect("number");
    let wav = fixture("tone1k.wav");
    use phone_recording::Accepted;
    let caller = "+447700900999";
    let wrong = if code == "00000000" {
        "11111111"
    } else {
        "00000000"
    };
    let none = phone_recording::accept(&app.state, &called, caller, None, wrong, wav.clone())
        .await
        .expect("accept");
    assert_eq!(none, Accepted::WrongCode, "wrong code");
    let other = E164::parse("+447700900123").expect("number");
    assert_eq!(
        phone_recording::accept(&app.state, &other, caller, None, &code, wav.clone())
            .await
            .expect("accept"),
        Accepted::WrongCode
    );
    let got = phone_recording::accept(&app.state, &called, caller, None, &code, wav.clone())
        .await
        .expect("accept");
    assert_eq!(
        got,
        Accepted::Recorded(dialtone_domain::Sid::parse(&sid).unwrap())
    );
    let v = get(&app, &acct, &sid).await;
    assert_eq!(v["status"], "pending-conversion", "{v}");
    assert_eq!(v["source"], "phone");
    assert_eq!(v["contentType"], "audio/wav");
    // A code works once.
    assert_eq!(
        phone_recording::accept(&app.state, &called, caller, None, &code, wav.clone())
            .await
            .expect("accept"),
        Accepted::WrongCode
    );
    drain(&app).await;
    let v = get(&app, &acct, &sid).await;
    assert_eq!(v["status"], "ready", "{v}");
    let (_, v) = send(app.req(&acct, Method::GET, "/v2.0/audio-files?source=phone")).await;
    assert_eq!(v["total"], 1);

    // Codes expire after 10 minutes.
    let (_, v) = send(app.req(&acct, Method::PUT, &format!("{path}?country=GB"))).await;
    let code = v["code"].as_str().expect("code").to_owned();
    let called = E164::parse(v["phoneNumber"].as_str().expect("number")).expect("number");
    app.clock.advance_ms(phone_recording::CODE_TTL_MS);
    assert_eq!(
        phone_recording::accept(&app.state, &called, caller, None, &code, wav.clone())
            .await
            .expect("accept"),
        Accepted::WrongCode
    );

    // Too large.
    let huge = vec![0u8; app.state.config.audio_max_bytes + 1];
    let err = phone_recording::accept(&app.state, &called, caller, None, &code, huge)
        .await
        .expect_err("too large");
    assert_eq!(err.code(), "file_too_large");
    let _ = START;
}

async fn audio_json_rpc(app: TestApp) {
    let acct = app.account().await;
    let v = rpc(&app, &acct, "media/library.create", json!(["Greeting"])).await;
    let id = v["result"].as_i64().unwrap_or_else(|| panic!("an id: {v}"));
    let v = rpc(&app, &acct, "media/library.get", json!([id])).await;
    let media = &v["result"];
    assert_eq!(media["name"], "Greeting", "{v}");
    assert_eq!(media["status"], "PENDING_CONTENT");
    assert_eq!(media["id"], id);
    let hash = media["hash"].as_str().expect("hash").to_owned();
    assert_eq!(hash.len(), 8);
    assert_eq!(hash, hash.to_uppercase());

    let v = rpc(&app, &acct, "media/library.set_name", json!([id, "Hello"])).await;
    assert_eq!(v["result"], true, "{v}");
    use base64::Engine;
    let b64 = base64::engine::general_purpose::STANDARD.encode(fixture("tone1k.wav"));
    let v = rpc(
        &app,
        &acct,
        "media/library.set_content",
        json!([hash, "", b64]),
    )
    .await;
    assert_eq!(v["result"], true, "{v}");
    drain(&app).await;
    let v = rpc(&app, &acct, "media/library.get", json!([hash])).await;
    assert_eq!(v["result"]["status"], "READY", "{v}");
    assert_eq!(v["result"]["name"], "Hello");
    // The complete Media.Library object, with a link that plays without credentials.
    let media = &v["result"];
    for (field, value) in [
        ("content", json!("")),
        ("voice", json!("")),
        ("source", json!("UPLOAD")),
        ("language", json!([])),
        ("category", json!([])),
        ("tags", json!({})),
        ("is_editable", json!(true)),
    ] {
        assert_eq!(media[field], value, "{field}: {media}");
    }
    assert!(media["duration"].is_i64(), "whole seconds: {media}");
    let url = media["url"].as_str().expect("a ready media has a url");
    let played = app.client.get(url).send().await.expect("url");
    assert_eq!(played.status(), 200, "{url}");
    let wav = played.bytes().await.expect("wav");
    assert_eq!(&wav[..4], b"RIFF");
    let forged = url.replace("signature=", "signature=00");
    assert_eq!(
        app.client
            .get(&forged)
            .send()
            .await
            .expect("forged")
            .status(),
        404
    );
    let (head, _) = url.split_once("expires=").expect("expires");
    let tail = url.split_once("&signature=").expect("signature").1;
    let stretched = format!("{head}expires=99999999999999&signature={tail}");
    assert_eq!(
        app.client
            .get(&stretched)
            .send()
            .await
            .expect("stretched")
            .status(),
        404
    );
    app.clock.advance_ms(24 * 3600 * 1000 + 1);
    assert_eq!(
        app.client.get(url).send().await.expect("expired").status(),
        404
    );
    // An id as a string of digits, as the example scripts pass command-line arguments.
    let v = rpc(&app, &acct, "media/library.get", json!([id.to_string()])).await;
    assert_eq!(v["result"]["hash"], hash.as_str(), "{v}");
    let v = rpc(&app, &acct, "media/library.get", json!(["12x"])).await;
    assert_eq!(v["error"]["code"], 115, "{v}");
    let v = rpc(&app, &acct, "media/library.get_list", json!([null])).await;
    assert_eq!(v["result"].as_array().map(Vec::len), Some(1), "{v}");
    let v = rpc(
        &app,
        &acct,
        "media/library.search",
        json!([{"name": "ell", "status": "READY"}, {"limit": 5}]),
    )
    .await;
    assert_eq!(v["result"]["total"], 1, "{v}");
    assert_eq!(v["result"]["hits"][0]["hash"], hash.as_str());
    assert_eq!(v["result"]["has_more"], false);
    let v = rpc(
        &app,
        &acct,
        "media/library.search",
        json!([{"status": "DONE"}, null]),
    )
    .await;
    assert_eq!(v["error"]["code"], 151, "{v}");
    let v = rpc(&app, &acct, "media/library.get_phone_id", json!([id, "GB"])).await;
    assert!(
        v["result"]["phone_number"]
            .as_str()
            .is_some_and(|n| n.starts_with("+44")),
        "{v}"
    );

    let other = app.account().await;
    let v = rpc(&app, &other, "media/library.get", json!([id])).await;
    assert_eq!(v["error"]["code"], 115, "{v}");
    let v = rpc(&app, &acct, "media/library.create", json!([])).await;
    assert_eq!(v["error"]["code"], 150, "{v}");
    let v = rpc(&app, &acct, "media/library.delete", json!([id])).await;
    assert_eq!(v["result"], true, "{v}");
    let v = rpc(&app, &acct, "media/library.get", json!([id])).await;
    assert_eq!(v["error"]["code"], 115, "{v}");
}
