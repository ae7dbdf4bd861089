//! Recordings: every search filter, read marks, the audio, deletion, and the bulk changes
//! done by tasks (also seen through JSON-RPC `jobs.*`).

use reqwest::Method;
use serde_json::{Value, json};

use crate::actions::{scenario, tone_wav};
use crate::both_backends;
use crate::helpers::{TestAccount, TestApp, assert_error, send};
use crate::jsonrpc::rpc;
use crate::sms::buy;

both_backends!(
    recordings_are_searched_by_every_filter,
    recordings_are_read_fetched_and_deleted,
    bulk_changes_are_tasks,
    sandbox_audio_is_multipart_or_raw_within_the_limit
);

const VOICEMAIL: &str = "branches:\n  inbound-call:\n    actions:\n      - action: record@v1\n        params: {maxDuration: 30}\n";
const CALL_RECORDING: &str = "branches:\n  inbound-call:\n    actions:\n      - action: startRecording@v1\n      - action: gather@v2\n        params: {maxDigits: 1, timeout: 60}\n";

/// A number of the account answered by `script`.
async fn line(app: &TestApp, acct: &TestAccount, script: &str) -> String {
    let number = buy(app, acct, "country=GB&type=mobile").await;
    let sid = scenario(app, acct, script).await;
    let (status, _) = send(app.req(
        acct,
        Method::PUT,
        &format!("/v2.0/actions/{sid}/numbers/{number}"),
    ))
    .await;
    assert_eq!(status, 204);
    number
}

/// A voicemail of `seconds` left by `from` on `number`; its callid.
async fn voicemail(
    app: &TestApp,
    acct: &TestAccount,
    from: &str,
    number: &str,
    seconds: u32,
) -> String {
    let (_, call) = send(
        app.req(acct, Method::POST, "/sandbox/calls")
            .json(&json!({"from": from, "to": number})),
    )
    .await;
    let callid = call["callid"].as_str().unwrap().to_owned();
    let (status, body) = send(
        app.req(
            acct,
            Method::POST,
            &format!("/sandbox/calls/{callid}/audio"),
        )
        .header("content-type", "audio/wav")
        .body(tone_wav(8_000, seconds * 1_000)),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    callid
}

/// The sids of a search, in order.
async fn found(app: &TestApp, acct: &TestAccount, q: &str) -> Vec<String> {
    let (status, page) = send(app.req(acct, Method::GET, &format!("/v2.0/recordings?{q}"))).await;
    assert_eq!(status, 200, "{q}: {page}");
    page["hits"]
        .as_array()
        .unwrap_or_else(|| panic!("{page}"))
        .iter()
        .map(|r| r["sid"].as_str().unwrap().to_owned())
        .collect()
}

async fn all(app: &TestApp, acct: &TestAccount) -> Vec<Value> {
    let (_, page) = send(app.req(acct, Method::GET, "/v2.0/recordings?order=asc&limit=100")).await;
    page["hits"].as_array().unwrap().clone()
}

async fn recordings_are_searched_by_every_filter(app: TestApp) {
    let acct = app.account().await;
    let number = line(&app, &acct, VOICEMAIL).await;
    let mut callids = Vec::new();
    for (from, seconds) in [
        ("+447700900901", 1),
        ("+447700900902", 2),
        ("+447700900903", 3),
    ] {
        callids.push(voicemail(&app, &acct, from, &number, seconds).await);
        app.clock.advance_ms(10_000);
    }
    let recorded = line(&app, &acct, CALL_RECORDING).await;
    let (_, call) = send(
        app.req(&acct, Method::POST, "/sandbox/calls")
            .json(&json!({"from": "+447700900904", "to": recorded})),
    )
    .await;
    let live = call["callid"].as_str().unwrap().to_owned();
    app.clock.advance_ms(4_000);
    let (status, _) = send(app.req(&acct, Method::DELETE, &format!("/v2.0/calls/{live}"))).await;
    assert_eq!(status, 204);

    let recs = all(&app, &acct).await;
    assert_eq!(recs.len(), 4, "{recs:?}");
    let sid = |i: usize| recs[i]["sid"].as_str().unwrap().to_owned();
    let durations: Vec<i64> = recs
        .iter()
        .map(|r| r["duration"].as_i64().unwrap())
        .collect();
    assert_eq!(durations, [1, 2, 3, 4]);
    assert_eq!(recs[0]["type"], "voicemail");
    assert_eq!(recs[0]["caller"], "+447700900901");
    assert_eq!(recs[0]["callee"], number.as_str());
    assert_eq!(recs[0]["callid"], callids[0].as_str());
    assert_eq!(recs[0]["read"], false);
    assert_eq!(recs[0]["readAt"], Value::Null);
    assert_eq!(recs[0]["transcript"], Value::Null);
    assert_eq!(recs[3]["type"], "call");

    // Default order: newest first.
    assert_eq!(
        found(&app, &acct, "").await,
        [sid(3), sid(2), sid(1), sid(0)]
    );
    assert_eq!(
        found(&app, &acct, &format!("sid={}", sid(1))).await,
        [sid(1)]
    );
    assert_eq!(found(&app, &acct, "type=call").await, [sid(3)]);
    assert_eq!(
        found(&app, &acct, "type=voicemail&order=asc").await,
        [sid(0), sid(1), sid(2)]
    );
    assert_eq!(found(&app, &acct, "caller=%2B447700900902").await, [sid(1)]);
    assert_eq!(
        found(
            &app,
            &acct,
            &format!("callee=%2B{}&sort=created&order=asc", &number[1..])
        )
        .await,
        [sid(0), sid(1), sid(2)]
    );
    assert_eq!(
        found(&app, &acct, &format!("callid={}", callids[2])).await,
        [sid(2)]
    );
    assert_eq!(
        found(&app, &acct, "minDuration=3&order=asc").await,
        [sid(2), sid(3)]
    );
    assert_eq!(found(&app, &acct, "minDuration=0").await.len(), 4);
    let created = |i: usize| recs[i]["created"].as_str().unwrap().replace('+', "%2B");
    assert_eq!(
        found(
            &app,
            &acct,
            &format!(
                "createdAfter={}&createdBefore={}&order=asc",
                created(1),
                created(3)
            )
        )
        .await,
        [sid(1), sid(2)]
    );
    assert_eq!(found(&app, &acct, "read=true").await, Vec::<String>::new());
    // Read marks: readAt is the clock's time.
    app.clock.advance_ms(60_000);
    let (status, marked) = send(
        app.req(
            &acct,
            Method::PATCH,
            &format!("/v2.0/recordings/{}", sid(0)),
        )
        .json(&json!({"read": true})),
    )
    .await;
    assert_eq!(status, 200, "{marked}");
    assert_eq!(marked["read"], true);
    let read_at = marked["readAt"].as_str().unwrap().replace('+', "%2B");
    app.clock.advance_ms(60_000);
    send(
        app.req(
            &acct,
            Method::PATCH,
            &format!("/v2.0/recordings/{}", sid(2)),
        )
        .json(&json!({"read": true})),
    )
    .await;
    assert_eq!(
        found(&app, &acct, "read=true&order=asc").await,
        [sid(0), sid(2)]
    );
    assert_eq!(
        found(&app, &acct, "read=false&order=asc").await,
        [sid(1), sid(3)]
    );
    assert_eq!(
        found(
            &app,
            &acct,
            &format!("readAfter={read_at}&readBefore={read_at}")
        )
        .await,
        Vec::<String>::new()
    );
    assert_eq!(
        found(&app, &acct, &format!("readBefore={read_at}")).await,
        Vec::<String>::new()
    );
    assert_eq!(
        found(&app, &acct, &format!("readAfter={read_at}&order=asc")).await,
        [sid(0), sid(2)]
    );
    let (_, later) =
        send(app.req(&acct, Method::GET, &format!("/v2.0/recordings/{}", sid(2)))).await;
    let later_at = later["readAt"].as_str().unwrap().replace('+', "%2B");
    assert_eq!(
        found(
            &app,
            &acct,
            &format!("readAfter={read_at}&readBefore={later_at}")
        )
        .await,
        [sid(0)]
    );
    // Paging.
    let (_, page) = send(app.req(&acct, Method::GET, "/v2.0/recordings?limit=1&offset=1")).await;
    assert_eq!(page["total"], 4);
    assert_eq!(page["hits"].as_array().unwrap().len(), 1);

    // Bad filters are 400 and name the parameter.
    for q in [
        "minDuration=-1",
        "minDuration=two",
        "type=memo",
        "read=yes",
        "caller=12",
        "createdAfter=yesterday",
        "readBefore=2025-13-01",
        "sort=name",
        "sid=NOT-A-SID",
        "limit=101",
        "color=red",
    ] {
        let (status, body) =
            send(app.req(&acct, Method::GET, &format!("/v2.0/recordings?{q}"))).await;
        assert_error(status, &body, 400, "validation_error");
    }
    // Another account sees none of them.
    let other = app.account().await;
    assert!(found(&app, &other, "").await.is_empty());
}

async fn recordings_are_read_fetched_and_deleted(app: TestApp) {
    let acct = app.account().await;
    let other = app.account().await;
    let number = line(&app, &acct, VOICEMAIL).await;
    voicemail(&app, &acct, "+447700900901", &number, 2).await;
    let rec = all(&app, &acct).await[0]["sid"]
        .as_str()
        .unwrap()
        .to_owned();
    let path = format!("/v2.0/recordings/{rec}");

    let (status, got) = send(app.req(&acct, Method::GET, &path)).await;
    assert_eq!(status, 200);
    assert_eq!(got["duration"], 2);
    let wav = app
        .req(&acct, Method::GET, &format!("{path}/file"))
        .send()
        .await
        .unwrap();
    assert_eq!(wav.status(), 200);
    assert_eq!(wav.headers()["content-type"], "audio/wav");
    let (rate, channels, ms) = dialtone_media::wav_info(&wav.bytes().await.unwrap()).unwrap();
    assert_eq!((rate, channels), (8_000, 1));
    assert!((ms as i64 - 2_000).abs() <= 50, "{ms} ms");

    // Read, read again (readAt kept), unread.
    let (_, read) = send(
        app.req(&acct, Method::PATCH, &path)
            .json(&json!({"read": true})),
    )
    .await;
    let at = read["readAt"].clone();
    assert!(at.is_string());
    app.clock.advance_ms(5_000);
    let (_, again) = send(
        app.req(&acct, Method::PATCH, &path)
            .json(&json!({"read": true})),
    )
    .await;
    assert_eq!(
        again["readAt"], at,
        "marking read twice keeps the first time"
    );
    let (_, same) = send(app.req(&acct, Method::PATCH, &path).json(&json!({}))).await;
    assert_eq!(same["read"], true, "an empty change changes nothing");
    let (_, unread) = send(
        app.req(&acct, Method::PATCH, &path)
            .json(&json!({"read": false})),
    )
    .await;
    assert_eq!(
        (unread["read"].clone(), unread["readAt"].clone()),
        (json!(false), Value::Null)
    );
    // Bad changes are refused and change nothing.
    for body in [
        json!({"read": "yes"}),
        json!({"duration": 9}),
        json!({"read": true, "name": "x"}),
    ] {
        let (status, err) = send(app.req(&acct, Method::PATCH, &path).json(&body)).await;
        assert_error(status, &err, 400, "validation_error");
    }
    let (_, still) = send(app.req(&acct, Method::GET, &path)).await;
    assert_eq!(still["read"], false);

    // Not found for another account, nor for a malformed sid.
    for (method, p) in [
        (Method::GET, path.clone()),
        (Method::GET, format!("{path}/file")),
        (Method::PATCH, path.clone()),
        (Method::DELETE, path.clone()),
        (Method::GET, "/v2.0/recordings/NOPE".to_owned()),
    ] {
        let (status, body) = send(app.req(&other, method, &p).json(&json!({"read": true}))).await;
        assert_error(status, &body, 404, "not_found");
    }
    let (status, _) = send(app.req(&acct, Method::DELETE, &path)).await;
    assert_eq!(status, 204);
    let (status, _) = send(app.req(&acct, Method::GET, &path)).await;
    assert_eq!(status, 404);
    let (status, _) = send(app.req(&acct, Method::GET, &format!("{path}/file"))).await;
    assert_eq!(status, 404, "the audio went with it");
    let (status, _) = send(app.req(&acct, Method::DELETE, &path)).await;
    assert_eq!(status, 404);
}

async fn bulk_changes_are_tasks(app: TestApp) {
    let acct = app.account().await;
    let other = app.account().await;
    let number = line(&app, &acct, VOICEMAIL).await;
    for from in ["+447700900901", "+447700900902", "+447700900903"] {
        voicemail(&app, &acct, from, &number, 1).await;
    }
    let theirs = line(&app, &other, VOICEMAIL).await;
    voicemail(&app, &other, "+447700900909", &theirs, 1).await;
    let sids: Vec<String> = all(&app, &acct)
        .await
        .iter()
        .map(|r| r["sid"].as_str().unwrap().to_owned())
        .collect();

    // Limits: 101 sids, a malformed sid, a missing or bad body.
    let many: Vec<String> = (0..101).map(|i| format!("sid=a{i:07}")).collect();
    let (status, body) = send(
        app.req(
            &acct,
            Method::PATCH,
            &format!("/v2.0/recordings?{}", many.join("&")),
        )
        .json(&json!({"read": true})),
    )
    .await;
    assert_error(status, &body, 400, "validation_error");
    let (status, body) = send(app.req(
        &acct,
        Method::DELETE,
        &format!("/v2.0/recordings?{}", many.join("&")),
    ))
    .await;
    assert_error(status, &body, 400, "validation_error");
    let hundred: Vec<String> = (0..100).map(|i| format!("sid=a{i:07}")).collect();
    let (status, _) = send(
        app.req(
            &acct,
            Method::PATCH,
            &format!("/v2.0/recordings?{}", hundred.join("&")),
        )
        .json(&json!({"read": true})),
    )
    .await;
    assert_eq!(status, 202, "100 sids are allowed");
    let (status, body) = send(
        app.req(&acct, Method::PATCH, "/v2.0/recordings?sid=BAD")
            .json(&json!({"read": true})),
    )
    .await;
    assert_error(status, &body, 400, "validation_error");
    let (status, body) = send(app.req(&acct, Method::PATCH, "/v2.0/recordings")).await;
    assert_error(status, &body, 400, "invalid_json");
    let (status, body) = send(
        app.req(&acct, Method::PATCH, "/v2.0/recordings")
            .json(&json!({"read": 1})),
    )
    .await;
    assert_error(status, &body, 400, "validation_error");
    app.tick().await;

    // Two named recordings marked read by a task.
    let (status, t) = send(
        app.req(
            &acct,
            Method::PATCH,
            &format!("/v2.0/recordings?sid={}&sid={}", sids[0], sids[1]),
        )
        .json(&json!({"read": true})),
    )
    .await;
    assert_eq!(status, 202, "{t}");
    let taskid = t["taskid"].as_str().unwrap().to_owned();
    let (_, pending) = send(app.req(&acct, Method::GET, &format!("/v2.0/tasks/{taskid}"))).await;
    assert_eq!(
        (pending["type"].as_str(), pending["status"].as_str()),
        (Some("recordings-update"), Some("PENDING"))
    );
    assert_eq!(pending["progress"], json!({"done": 0, "total": 2}));
    let job = rpc(&app, &acct, "jobs.get", json!([taskid.to_uppercase()])).await;
    assert_eq!(job["result"]["status"], "PENDING", "{job}");
    app.tick().await;
    let (_, done) = send(app.req(&acct, Method::GET, &format!("/v2.0/tasks/{taskid}"))).await;
    assert_eq!(done["status"], "DONE", "{done}");
    assert_eq!(done["result"], json!({"count": 2}));
    let mut expected = vec![sids[0].clone(), sids[1].clone()];
    expected.sort();
    assert_eq!(found_read(&app, &acct).await, expected);
    let job = rpc(&app, &acct, "jobs.get", json!([taskid.to_uppercase()])).await;
    assert_eq!(
        job["result"],
        json!({"hash": taskid.to_uppercase(), "type": "recordings-update", "status": "DONE", "progress": 100, "result": {"count": 2}})
    );
    let refused = rpc(&app, &acct, "jobs.cancel", json!([taskid])).await;
    assert_eq!(refused["error"]["code"], 151, "{refused}");
    let missing = rpc(&app, &other, "jobs.get", json!([taskid])).await;
    assert_eq!(missing["error"]["code"], 115, "{missing}");
    let (status, body) =
        send(app.req(&acct, Method::DELETE, &format!("/v2.0/tasks/{taskid}"))).await;
    assert_error(status, &body, 400, "task_not_cancellable");

    // No sid: every recording of the account, and only of the account.
    let (_, t) = send(
        app.req(&acct, Method::PATCH, "/v2.0/recordings")
            .json(&json!({"read": false})),
    )
    .await;
    app.tick().await;
    let (_, done) = send(app.req(
        &acct,
        Method::GET,
        &format!("/v2.0/tasks/{}", t["taskid"].as_str().unwrap()),
    ))
    .await;
    assert_eq!(done["result"], json!({"count": 3}));
    assert!(found_read(&app, &acct).await.is_empty());

    // A pending task cancelled through JSON-RPC does nothing.
    let (_, t) = send(app.req(&acct, Method::DELETE, "/v2.0/recordings")).await;
    let cancelled = rpc(&app, &acct, "jobs.cancel", json!([t["taskid"]])).await;
    assert_eq!(cancelled["result"], true, "{cancelled}");
    app.tick().await;
    assert_eq!(all(&app, &acct).await.len(), 3);

    // Deletes: one named, then all.
    let (_, t) = send(app.req(
        &acct,
        Method::DELETE,
        &format!("/v2.0/recordings?sid={}", sids[2]),
    ))
    .await;
    app.tick().await;
    let (_, done) = send(app.req(
        &acct,
        Method::GET,
        &format!("/v2.0/tasks/{}", t["taskid"].as_str().unwrap()),
    ))
    .await;
    assert_eq!(done["result"], json!({"count": 1}));
    assert_eq!(all(&app, &acct).await.len(), 2);
    let (status, t) = send(app.req(&acct, Method::DELETE, "/v2.0/recordings")).await;
    assert_eq!(status, 202);
    app.tick().await;
    let (_, done) = send(app.req(
        &acct,
        Method::GET,
        &format!("/v2.0/tasks/{}", t["taskid"].as_str().unwrap()),
    ))
    .await;
    assert_eq!(done["result"], json!({"count": 2}));
    assert!(all(&app, &acct).await.is_empty());
    assert_eq!(
        all(&app, &other).await.len(),
        1,
        "the other account keeps its recording"
    );

    // Every move was a job.status_update in the earlier Job shape.
    let events = app.events(&acct.sid, "job.status_update").await;
    assert!(
        events.iter().any(|e| e["status"] == "CANCELED"),
        "{events:?}"
    );
    for e in &events {
        assert!(e["hash"].is_string() && e["progress"].is_i64(), "{e}");
    }
}

async fn found_read(app: &TestApp, acct: &TestAccount) -> Vec<String> {
    let mut sids = found(app, acct, "read=true&order=asc").await;
    sids.sort();
    sids
}

async fn sandbox_audio_is_multipart_or_raw_within_the_limit(app: TestApp) {
    let app = TestApp::spawn_with(app.backend, |c| c.audio_max_bytes = 64 * 1024)
        .await
        .expect("app");
    let acct = app.account().await;
    let number = line(&app, &acct, VOICEMAIL).await;
    let call = |from: &'static str| {
        let number = number.clone();
        let app = &app;
        let acct = &acct;
        async move {
            let (_, call) = send(
                app.req(acct, Method::POST, "/sandbox/calls")
                    .json(&json!({"from": from, "to": number})),
            )
            .await;
            call["callid"].as_str().unwrap().to_owned()
        }
    };
    // Multipart, as CONTRACT section 8 says: the file part is heard.
    let callid = call("+447700900901").await;
    let (ct, body) =
        crate::audio_files::multipart(&[("file", Some("audio/wav"), &tone_wav(8_000, 2_000))]);
    let (status, heard) = send(
        app.req(
            &acct,
            Method::POST,
            &format!("/sandbox/calls/{callid}/audio"),
        )
        .header("content-type", ct)
        .body(body),
    )
    .await;
    assert_eq!(status, 200, "{heard}");
    let recs = all(&app, &acct).await;
    assert_eq!(recs.len(), 1);
    assert_eq!(recs[0]["duration"], 2);
    // Over the limit (64 KiB here): 400 file_too_large, raw or multipart, and nothing kept.
    let callid = call("+447700900902").await;
    let big = tone_wav(8_000, 5_000); // 80 KB
    let (status, body) = send(
        app.req(
            &acct,
            Method::POST,
            &format!("/sandbox/calls/{callid}/audio"),
        )
        .header("content-type", "audio/wav")
        .body(big.clone()),
    )
    .await;
    assert_error(status, &body, 400, "file_too_large");
    let (ct, multi) = crate::audio_files::multipart(&[("file", Some("audio/wav"), &big)]);
    let (status, body) = send(
        app.req(
            &acct,
            Method::POST,
            &format!("/sandbox/calls/{callid}/audio"),
        )
        .header("content-type", ct)
        .body(multi),
    )
    .await;
    assert_error(status, &body, 400, "file_too_large");
    // A multipart body without a file part is refused too.
    let (ct, empty) = crate::audio_files::multipart(&[("name", None, b"x")]);
    let (status, body) = send(
        app.req(
            &acct,
            Method::POST,
            &format!("/sandbox/calls/{callid}/audio"),
        )
        .header("content-type", ct)
        .body(empty),
    )
    .await;
    assert_error(status, &body, 400, "validation_error");
    assert_eq!(all(&app, &acct).await.len(), 1);
}
