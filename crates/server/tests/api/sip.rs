//! Real calls over SIP and RTP, against peers the project does not write (SIPp and
//! baresip, on loopback): calls coming in through a trunk run their scenario, refusals
//! carry their SIP status and Q.850 cause, keys arrive as telephone-events or tones, the
//! far end hears what a scenario plays and says (measured with sox), dials go out through
//! the trunk that routes them and are bridged, recordings hold what was said.

use std::net::SocketAddr;
use std::time::Duration;

use dialtone_sip::{NodeConfig, TrunkConfig};
use reqwest::Method;
use serde_json::{Value, json};

use crate::audio_files::{drain, upload};
use crate::helpers::{Backend, TestAccount, TestApp, send};
use crate::sms::buy;
use crate::voice_peers::{
    BYE_RECEIVED, BYE_SENT, Baresip, INVITE_HEAD, Sipp, answered_call, installed, measure, offer,
    refused_call, tone_wav,
};

/// Runs a test with a SIP node on loopback and the trunks `trunks` makes, on both
/// databases, when SIPp, baresip and sox are installed.
macro_rules! sip_tests {
    ($($name:ident),+ $(,)?) => {$(
        mod $name {
            use crate::helpers::Backend;
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() {
                if let Some(app) = super::spawn(Backend::Sqlite).await {
                    super::$name(app).await;
                }
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres() {
                if let Some(app) = super::spawn(Backend::Postgres).await {
                    super::$name(app).await;
                }
            }
        }
    )+};
}

sip_tests!(
    an_inbound_call_runs_its_scenario_and_takes_telephone_events,
    refused_calls_carry_their_status_and_q850_cause,
    strangers_are_refused_and_credentials_let_a_caller_in,
    a_caller_who_cancels_ends_the_call_and_its_hangup_branch_runs,
    the_api_hangs_up_a_sip_call_with_a_bye,
    keys_as_tones_are_heard_on_trunks_without_telephone_events,
    the_far_end_hears_a_played_file_and_spoken_text,
    a_voicemail_holds_what_the_caller_said,
    a_forwarded_call_is_bridged_through_a_trunk_and_recorded,
    a_dial_through_a_trunk_reports_busy_and_cancels_unanswered_targets,
    trunks_are_added_listed_and_removed_by_the_operator,
    a_key_cuts_a_gather_prompt_short,
    an_audio_file_is_recorded_by_phone_over_a_real_call,
    a_trunk_that_asks_for_it_is_registered_with_its_credentials,
    a_new_offer_within_the_call_is_answered_and_keys_come_by_sip_info,
    a_new_offer_sent_before_the_ack_is_answered_once_the_ack_came,
    a_stranger_who_keeps_calling_is_no_longer_answered,
    words_spoken_by_the_neural_voice_are_recorded_and_transcribed_back,
);

/// SIP over TLS: a baresip phone calls the node's TLS listener (a certificate made for the
/// test); the call runs its scenario and the phone hears the file it plays.
mod a_call_over_tls_runs_its_scenario {
    use crate::helpers::Backend;
    async fn run(backend: Backend) {
        let dir = tempfile::tempdir().expect("dir");
        let names = dialtone::tls::self_signed_names("127.0.0.1".parse().expect("ip"));
        dialtone::tls::self_signed(dir.path(), &names, 0).expect("certificate");
        let tls = std::net::SocketAddr::from(([127, 0, 0, 1], crate::voice_peers::ports()));
        let app = super::spawn_with(backend, |n| {
            n.tls_listen = Some(tls);
            n.tls_cert = Some(dir.path().join("cert.pem").display().to_string());
            n.tls_key = Some(dir.path().join("key.pem").display().to_string());
        })
        .await;
        if let Some(app) = app {
            super::a_call_over_tls_runs_its_scenario(app, tls).await;
        }
    }
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn sqlite() {
        run(Backend::Sqlite).await;
    }
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn postgres() {
        run(Backend::Postgres).await;
    }
}

async fn a_call_over_tls_runs_its_scenario(app: TestApp, tls: SocketAddr) {
    let acct = app.account().await;
    let tone = ready_audio(&app, &acct, &tone_wav(1000.0, 1500)).await;
    let script = format!(
        "branches:\n  inbound-call:\n    actions:\n      - action: play@v1\n        params: {{ media: \"{tone}\" }}\n      - action: hangup@v1\n"
    );
    let (number, _) = number_with(&app, &acct, &script).await;
    let phone = Baresip::start(&tone_wav(0.0, 30_000), "+447700900999").await;
    phone
        .command("dial", &format!("sip:{number}@{tls};transport=tls"))
        .await;
    let callid = loop_for_call(&app, &acct).await;
    let call = ended(&app, &acct, &callid).await;
    assert_eq!(call["hangupSource"], "callee", "{call}");
    let (_dir, heard) = phone.stop().await;
    let tone = measure(
        heard.first().expect("baresip recorded the call"),
        Some((900, 1100)),
    )
    .await;
    assert!(
        tone.loudest > 0.15 && (tone.frequency - 1000.0).abs() < 60.0,
        "the 1 kHz file at about -10 dBFS: {tone:?}"
    );
}

/// A far end that sends no RTP (a dead phone, a broken NAT) is hung up after the media
/// timeout: BYE, cause 102, source system.
mod a_silent_far_end_is_hung_up_after_the_media_timeout {
    use crate::helpers::Backend;
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn sqlite() {
        if let Some(app) = super::spawn_with(Backend::Sqlite, |n| n.media_timeout_secs = 2).await {
            super::a_silent_far_end_is_hung_up_after_the_media_timeout(app).await;
        }
    }
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn postgres() {
        if let Some(app) = super::spawn_with(Backend::Postgres, |n| n.media_timeout_secs = 2).await
        {
            super::a_silent_far_end_is_hung_up_after_the_media_timeout(app).await;
        }
    }
}

/// The trunk every call comes in through in these tests (loopback).
const TRUNK: &str = "lab";

/// A server with a SIP node on a free loopback port and the `lab` trunk (127.0.0.1); None
/// when a peer is missing or PostgreSQL is not configured (said, and failed in CI).
async fn spawn(backend: Backend) -> Option<TestApp> {
    spawn_with(backend, |_| {}).await
}

/// Like [`spawn`], with a chance to change the node's configuration.
async fn spawn_with(backend: Backend, adjust: impl FnOnce(&mut NodeConfig)) -> Option<TestApp> {
    if !installed("sipp") || !installed("baresip") || !installed("sox") {
        return None;
    }
    // A port of the peers' range, not an ephemeral one: the SIP node listens on it with
    // UDP and TCP, and a TCP port another test found free must stay free.
    let port = crate::voice_peers::ports();
    let mut node = NodeConfig {
        listen: std::net::SocketAddr::from(([127, 0, 0, 1], port)),
        ..NodeConfig::default()
    };
    adjust(&mut node);
    let app = TestApp::spawn_with(backend, |c| {
        c.sip_node = Some(node);
        c.sip = vec![TrunkConfig::new(TRUNK, "127.0.0.1", 5060)];
    })
    .await;
    if app.is_none() {
        crate::helpers::skip("set DIALTONE_TEST_DATABASE_URL to run this test on PostgreSQL");
    }
    app
}

/// SIPp calls `number` from 127.0.0.1 (with telephone-events in its offer when `events`),
/// and once answered runs `middle`: whether every step passed, and its errors.
async fn sipp_caller(app: &TestApp, number: &str, events: bool, middle: &str) -> (bool, String) {
    Sipp::call(
        &answered_call(&offer(events), middle),
        sip_addr(app),
        number,
        "127.0.0.1",
        &[],
    )
    .finish()
    .await
}

fn sip_addr(app: &TestApp) -> SocketAddr {
    app.state
        .networks
        .sip()
        .expect("the SIP node runs")
        .local_addr()
}

/// A number of the account with `script` attached.
async fn number_with(app: &TestApp, acct: &TestAccount, script: &str) -> (String, String) {
    let number = buy(app, acct, "country=GB&type=mobile").await;
    let sid = crate::actions::scenario(app, acct, script).await;
    let (status, v) = send(app.req(
        acct,
        Method::PUT,
        &format!("/v2.0/numbers/{number}/scenario/{sid}"),
    ))
    .await;
    assert!(status.is_success(), "{v}");
    (number, sid)
}

/// The account's calls, oldest first: (callid, network).
async fn calls_of(app: &TestApp, acct: &TestAccount) -> Vec<(String, String)> {
    let sid = dialtone_domain::Sid::parse(&acct.sid).expect("sid");
    app.state
        .store
        .read(move |c| {
            let account = dialtone_store::accounts::by_sid(c, &sid)?.expect("account");
            let rows = c.query(
                "SELECT callid, network FROM calls WHERE account_id = $1 ORDER BY id",
                dialtone_store::params![account.id],
            )?;
            rows.iter()
                .map(|r| Ok((r.text(0)?, r.text(1)?)))
                .collect::<Result<Vec<_>, dialtone_store::DbError>>()
        })
        .await
        .expect("calls")
}

/// The call `callid` once it ended (a real network ends it in real time: polled, at most
/// 20 s), with its timeline.
async fn ended(app: &TestApp, acct: &TestAccount, callid: &str) -> Value {
    for _ in 0..400 {
        let (status, call) =
            send(app.req(acct, Method::GET, &format!("/sandbox/calls/{callid}"))).await;
        assert_eq!(status, 200, "{call}");
        if call["status"] == "ended" {
            return call;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("call {callid} did not end");
}

fn kinds(call: &Value) -> Vec<String> {
    call["timeline"]
        .as_array()
        .map(|t| {
            t.iter()
                .map(|e| e["kind"].as_str().unwrap_or_default().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

fn entry<'a>(call: &'a Value, kind: &str) -> &'a Value {
    call["timeline"]
        .as_array()
        .and_then(|t| t.iter().find(|e| e["kind"] == kind))
        .unwrap_or_else(|| panic!("no {kind} on the timeline: {call}"))
}

/// An audio file of the account, converted and ready: its sid.
async fn ready_audio(app: &TestApp, acct: &TestAccount, wav: &[u8]) -> String {
    let sid = upload(app, acct, "tone", "audio/wav", wav).await;
    drain(app).await;
    sid
}

/// A call through SIPp: INVITE to `number`, telephone-event `1` sent after the answer,
/// then dialtone's scenario plays a file, gathers the key and hangs up with a BYE. The
/// CDR, the timeline and the events are those of a sandbox call, on the trunk's network.
async fn an_inbound_call_runs_its_scenario_and_takes_telephone_events(app: TestApp) {
    let acct = app.account().await;
    let tone = ready_audio(&app, &acct, &tone_wav(1000.0, 400)).await;
    let script = format!(
        "branches:\n  inbound-call:\n    actions:\n      - action: play@v1\n        params: {{ media: \"{tone}\" }}\n      - action: gather@v2\n        params: {{ maxDigits: 1, timeout: 10 }}\n        result: $choice\n      - action: hangup@v1\n  hangup:\n    actions:\n      - action: javascript@v1\n        params: {{ code: \"$final = call.status\" }}\n"
    );
    let (number, _) = number_with(&app, &acct, &script).await;
    let middle = format!(
        "  <pause milliseconds=\"1000\"/>\n  <nop><action><exec play_pcap_audio=\"{{pcaps}}/dtmf_2833_1.pcap\"/></action></nop>\n{BYE_RECEIVED}"
    );
    let sipp = Sipp::call(
        &answered_call(&offer(true), &middle),
        sip_addr(&app),
        &number,
        "127.0.0.1",
        &[],
    );
    let (ok, errors) = sipp.finish().await;
    assert!(ok, "SIPp: {errors}");
    let calls = calls_of(&app, &acct).await;
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert_eq!(calls[0].1, TRUNK, "the call is on the trunk's network");
    let call = ended(&app, &acct, &calls[0].0).await;
    assert!(call["answered"].is_string(), "{call}");
    assert_eq!(call["hangupCause"], 16, "{call}");
    assert_eq!(
        call["hangupSource"], "callee",
        "the scenario hung up: {call}"
    );
    assert_eq!(call["from"], "+447700900999", "{call}");
    let k = kinds(&call);
    for want in [
        "ringing", "answered", "play", "gather", "dtmf", "gathered", "hangup",
    ] {
        assert!(k.iter().any(|x| x == want), "{want} missing from {k:?}");
    }
    assert_eq!(entry(&call, "gathered")["data"]["digits"], "1", "{call}");
    assert_eq!(app.events(&acct.sid, "call.inbound_start").await.len(), 1);
    assert_eq!(app.events(&acct.sid, "call.inbound_hangup").await.len(), 1);
}

/// A number without a scenario is declined 404 with `Q.850;cause=1` (and the declined call
/// is recorded); a number of nobody too (not recorded); a suspended account's calls are
/// refused 403 cause 21, an unfunded one's 402; past the trunk's cap, 503 cause 34.
async fn refused_calls_carry_their_status_and_q850_cause(app: TestApp) {
    let acct = app.account().await;
    let detached = buy(&app, &acct, "country=GB&type=mobile").await;
    let run = |service: &str, status: u16, reason: &str| {
        Sipp::call(
            &refused_call(status, reason),
            sip_addr(&app),
            service,
            "127.0.0.1",
            &[],
        )
    };
    let (ok, errors) = run(&detached, 404, "Q\\.850;cause=1[;]").finish().await;
    assert!(ok, "declined: {errors}");
    let calls = calls_of(&app, &acct).await;
    assert_eq!(calls.len(), 1, "the declined call is recorded");
    let call = ended(&app, &acct, &calls[0].0).await;
    assert_eq!(call["hangupCause"], 1, "{call}");
    let (ok, errors) = run("+447700999999", 404, "cause=1[;]").finish().await;
    assert!(ok, "nobody's number: {errors}");

    let (number, _) = number_with(
        &app,
        &acct,
        "branches:\n  inbound-call:\n    actions:\n      - action: hangup@v1\n",
    )
    .await;
    let (status, v) = send(
        app.admin(Method::PATCH, &format!("/admin/accounts/{}", acct.sid))
            .json(&json!({"status": "suspended"})),
    )
    .await;
    assert!(status.is_success(), "{v}");
    let (ok, errors) = run(&number, 403, "cause=21;text=\"account suspended\"")
        .finish()
        .await;
    assert!(ok, "suspended: {errors}");

    let poor = app
        .account_with(json!({"name": "poor", "credit": "0.00"}))
        .await;
    let rich = app.account().await;
    let (number, _) = number_with(
        &app,
        &rich,
        "branches:\n  inbound-call:\n    actions:\n      - action: hangup@v1\n",
    )
    .await;
    move_number(&app, &number, &poor).await;
    let (ok, errors) = run(&number, 402, "insufficient credit").finish().await;
    assert!(ok, "unfunded: {errors}");
    assert!(
        calls_of(&app, &poor).await.is_empty(),
        "nothing recorded for a refused call"
    );
}

/// Gives `number` to `to` (an operator's move, for an account that could not buy it).
async fn move_number(app: &TestApp, number: &str, to: &TestAccount) {
    let (number, sid) = (
        number.to_owned(),
        dialtone_domain::Sid::parse(&to.sid).expect("sid"),
    );
    app.state
        .store
        .write(move |c| {
            let account = dialtone_store::accounts::by_sid(c, &sid)?.expect("account");
            c.execute(
                "UPDATE numbers SET account_id = $1 WHERE e164 = $2",
                dialtone_store::params![account.id, number.as_str()],
            )?;
            Ok::<_, dialtone_store::DbError>(())
        })
        .await
        .expect("moved");
}

/// An INVITE from an address no trunk allows is refused 403 (cause 21) before anything
/// else: dialtone is never an open relay. A trunk with credentials challenges such a
/// caller (407) and takes it when it answers with them.
async fn strangers_are_refused_and_credentials_let_a_caller_in(app: TestApp) {
    let acct = app.account().await;
    let (number, _) = number_with(
        &app,
        &acct,
        "branches:\n  inbound-call:\n    actions:\n      - action: hangup@v1\n",
    )
    .await;
    // 127.0.0.2 is loopback too, but not the trunk's address.
    let (ok, errors) = Sipp::call(
        &refused_call(403, "cause=21"),
        sip_addr(&app),
        &number,
        "127.0.0.2",
        &[],
    )
    .finish()
    .await;
    assert!(ok, "stranger: {errors}");
    assert!(calls_of(&app, &acct).await.is_empty());

    let mut pbx = TrunkConfig::new("pbx", "192.0.2.10", 5060);
    pbx.username = Some("office".into());
    pbx.password = Some("s3cret-pass".into());
    let (status, v) = send(app.admin(Method::POST, "/admin/sip").json(&pbx)).await;
    assert_eq!(status, 201, "{v}");
    let challenged = format!(
        r#"<?xml version="1.0" encoding="ISO-8859-1" ?>
<scenario name="digest">
  <send retrans="500"><![CDATA[{head}{offer}
  ]]></send>
  <recv response="100" optional="true"/>
  <recv response="407" auth="true"/>
  <send><![CDATA[
      ACK sip:[service]@[remote_ip]:[remote_port] SIP/2.0
      Via: SIP/2.0/[transport] [local_ip]:[local_port];branch=[branch-3]
      From: <sip:+447700900999@[local_ip]:[local_port]>;tag=[pid]SIPpTag00[call_number]
      To: <sip:[service]@[remote_ip]:[remote_port]>[peer_tag_param]
      Call-ID: [call_id]
      CSeq: 1 ACK
      Content-Length: 0
  ]]></send>
  <send retrans="500"><![CDATA[
      INVITE sip:[service]@[remote_ip]:[remote_port] SIP/2.0
      Via: SIP/2.0/[transport] [local_ip]:[local_port];branch=[branch]
      From: <sip:+447700900999@[local_ip]:[local_port]>;tag=[pid]SIPpTag00[call_number]
      To: <sip:[service]@[remote_ip]:[remote_port]>
      Call-ID: [call_id]
      CSeq: 2 INVITE
      Contact: sip:sipp@[local_ip]:[local_port]
      [authentication username={user} password={password}]
      Max-Forwards: 70
{offer}
  ]]></send>
  <recv response="100" optional="true"/>
  <recv response="180" optional="true"/>
  <recv response="200"/>
{ack}
{bye}
</scenario>"#,
        head = crate::voice_peers::INVITE_HEAD,
        offer = offer(true),
        user = "office",
        password = "s3cret-pass",
        ack = crate::voice_peers::ACK.replace("CSeq: 1 ACK", "CSeq: 2 ACK"),
        bye = BYE_RECEIVED,
    );
    let (ok, errors) = Sipp::call(&challenged, sip_addr(&app), &number, "127.0.0.2", &[])
        .finish()
        .await;
    assert!(ok, "with credentials: {errors}");
    let calls = calls_of(&app, &acct).await;
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert_eq!(
        calls[0].1, "pbx",
        "the call came through the trunk it authenticated as"
    );
    // Wrong credentials: refused.
    let wrong = challenged.replace("password=s3cret-pass", "password=guess");
    let (ok, _) = Sipp::call(&wrong, sip_addr(&app), &number, "127.0.0.2", &[])
        .finish()
        .await;
    assert!(!ok, "a wrong password must not get in");
    assert_eq!(calls_of(&app, &acct).await.len(), 1);
}

/// A caller who hangs up while the call rings (CANCEL) ends it: 487 to the caller, the
/// CDR ended by the caller, and the scenario's hangup branch runs.
async fn a_caller_who_cancels_ends_the_call_and_its_hangup_branch_runs(app: TestApp) {
    let acct = app.account().await;
    let script = "defaults:\n  autoAnswer: false\nbranches:\n  inbound-call:\n    actions:\n      - action: ringing@v1\n      - action: wait@v1\n        params: { seconds: 60 }\n  hangup:\n    actions:\n      - action: javascript@v1\n        params: { code: \"$cancelled = call.cdr.hangupSource\" }\n";
    let (number, sid) = number_with(&app, &acct, script).await;
    let xml = format!(
        r#"<?xml version="1.0" encoding="ISO-8859-1" ?>
<scenario name="cancel">
  <send retrans="500"><![CDATA[{head}{offer}
  ]]></send>
  <recv response="100" optional="true"/>
  <recv response="180"/>
  <send><![CDATA[
      CANCEL sip:[service]@[remote_ip]:[remote_port] SIP/2.0
      Via: SIP/2.0/[transport] [local_ip]:[local_port];branch=[branch-3]
      From: <sip:+447700900999@[local_ip]:[local_port]>;tag=[pid]SIPpTag00[call_number]
      To: <sip:[service]@[remote_ip]:[remote_port]>
      Call-ID: [call_id]
      CSeq: 1 CANCEL
      Max-Forwards: 70
      Content-Length: 0
  ]]></send>
  <recv response="200"/>
  <recv response="487"/>
  <send><![CDATA[
      ACK sip:[service]@[remote_ip]:[remote_port] SIP/2.0
      Via: SIP/2.0/[transport] [local_ip]:[local_port];branch=[branch-6]
      From: <sip:+447700900999@[local_ip]:[local_port]>;tag=[pid]SIPpTag00[call_number]
      To: <sip:[service]@[remote_ip]:[remote_port]>[peer_tag_param]
      Call-ID: [call_id]
      CSeq: 1 ACK
      Content-Length: 0
  ]]></send>
</scenario>"#,
        head = crate::voice_peers::INVITE_HEAD,
        offer = offer(true),
    );
    let (ok, errors) = Sipp::call(&xml, sip_addr(&app), &number, "127.0.0.1", &[])
        .finish()
        .await;
    assert!(ok, "cancel: {errors}");
    let calls = calls_of(&app, &acct).await;
    let call = ended(&app, &acct, &calls[0].0).await;
    assert!(call["answered"].is_null(), "{call}");
    assert_eq!(call["hangupSource"], "caller", "{call}");
    // The run's wait goes on after the call (a wait needs no call); its hangup branch ran.
    let run = newest_run(&app, &acct, &sid, |r| {
        r["variables"]["$cancelled"].is_string()
    })
    .await;
    assert_eq!(run["variables"]["$cancelled"], "caller", "{run}");
}

/// The newest run of scenario `sid`, once it ended (polled, at most 20 s).
async fn wait_run(app: &TestApp, acct: &TestAccount, sid: &str) -> Value {
    newest_run(app, acct, sid, |r| r["status"] != "running").await
}

/// The newest run of scenario `sid`, once `done` says so (polled, at most 20 s).
async fn newest_run(
    app: &TestApp,
    acct: &TestAccount,
    sid: &str,
    done: impl Fn(&Value) -> bool,
) -> Value {
    for _ in 0..400 {
        let scenario = sid.to_owned();
        let newest = app
            .state
            .store
            .read(move |c| {
                c.query_opt(
                    "SELECT sid FROM runs WHERE scenario_sid = $1 ORDER BY id DESC LIMIT 1",
                    dialtone_store::params![scenario.as_str()],
                )?
                .map(|r| r.text(0))
                .transpose()
            })
            .await
            .expect("runs");
        if let Some(run) = newest {
            let (_, r) = send(app.req(
                acct,
                Method::GET,
                &format!("/v2.0/actions/{sid}/runs/{run}"),
            ))
            .await;
            if done(&r) {
                return r;
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let scenario = sid.to_owned();
    let row = app
        .state
        .store
        .read(move |c| {
            c.query_opt(
                "SELECT status, state, pending FROM runs WHERE scenario_sid = $1 ORDER BY id DESC LIMIT 1",
                dialtone_store::params![scenario.as_str()],
            )?
            .map(|r| Ok::<_, dialtone_store::DbError>((r.text(0)?, r.opt_text(1)?, r.text(2)?)))
            .transpose()
        })
        .await
        .expect("runs");
    panic!("the run did not end: {row:?}");
}

/// `DELETE /v2.0/calls/{callid}` ends a live SIP call: the caller gets a BYE with the
/// cause, the CDR ends by the system.
async fn the_api_hangs_up_a_sip_call_with_a_bye(app: TestApp) {
    let acct = app.account().await;
    let script = "branches:\n  inbound-call:\n    actions:\n      - action: wait@v1\n        params: { seconds: 60 }\n";
    let (number, _) = number_with(&app, &acct, script).await;
    let middle = BYE_RECEIVED.replace(
        "<recv request=\"BYE\" timeout=\"30000\"/>",
        "<recv request=\"BYE\" timeout=\"30000\"><action><ereg regexp=\"Q\\.850;cause=\" search_in=\"hdr\" header=\"Reason:\" check_it=\"true\" assign_to=\"r\"/></action></recv>\n  <Reference variables=\"r\"/>",
    );
    let sipp = Sipp::call(
        &answered_call(&offer(true), &middle),
        sip_addr(&app),
        &number,
        "127.0.0.1",
        &[],
    );
    let callid = loop_for_call(&app, &acct).await;
    let (status, v) = send(app.req(&acct, Method::DELETE, &format!("/v2.0/calls/{callid}"))).await;
    assert!(status.is_success(), "{v}");
    let (ok, errors) = sipp.finish().await;
    assert!(ok, "the caller got a BYE: {errors}");
    let call = ended(&app, &acct, &callid).await;
    assert_eq!(call["hangupSource"], "system", "{call}");
}

/// The first call of the account once it is answered (polled, at most 20 s).
async fn loop_for_call(app: &TestApp, acct: &TestAccount) -> String {
    for _ in 0..400 {
        if let Some((callid, _)) = calls_of(app, acct).await.first() {
            let (_, call) =
                send(app.req(acct, Method::GET, &format!("/sandbox/calls/{callid}"))).await;
            if call["answered"].is_string() {
                return callid.clone();
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mut seen = Vec::new();
    for (callid, _) in calls_of(app, acct).await {
        seen.push(
            send(app.req(acct, Method::GET, &format!("/sandbox/calls/{callid}")))
                .await
                .1,
        );
    }
    panic!("no call was answered: {seen:?}");
}

/// A caller whose SDP offers no telephone-events presses keys as tones in its audio (a
/// file SIPp streams): dialtone hears them in-band.
async fn keys_as_tones_are_heard_on_trunks_without_telephone_events(app: TestApp) {
    let acct = app.account().await;
    let script = "branches:\n  inbound-call:\n    actions:\n      - action: gather@v2\n        params: { maxDigits: 3, timeout: 15 }\n        result: $keys\n      - action: hangup@v1\n";
    let (number, sid) = number_with(&app, &acct, script).await;
    let dir = tempfile::tempdir().expect("dir");
    let keys = dir.path().join("keys.wav");
    // 4, 2 and # as dual tones (100 ms each, 100 ms apart), µ-law as SIPp streams it.
    let status = tokio::process::Command::new("sox")
        .args(["-n", "-r", "8000", "-c", "1", "-e", "u-law"])
        .arg(&keys)
        .args([
            "synth", "0.1", "sine", "770", "sine", "1209", ":", "synth", "0.1", "sine", "0", ":",
            "synth", "0.1", "sine", "697", "sine", "1336", ":", "synth", "0.1", "sine", "0", ":",
            "synth", "0.1", "sine", "941", "sine", "1477", "gain", "-6",
        ])
        .status()
        .await
        .expect("sox");
    assert!(status.success());
    let middle = format!(
        "  <pause milliseconds=\"500\"/>\n  <nop><action><exec rtp_stream=\"{},1,0\"/></action></nop>\n{BYE_RECEIVED}",
        keys.display()
    );
    let (ok, errors) = sipp_caller(&app, &number, false, &middle).await;
    assert!(ok, "SIPp: {errors}");
    let run = wait_run(&app, &acct, &sid).await;
    assert_eq!(run["variables"]["$keys"]["digits"], "42#", "{run}");
    assert_eq!(run["variables"]["$keys"]["reason"], "maxDigits", "{run}");
}

/// A baresip phone calls the number: it hears the audio file the scenario plays (its
/// frequency and level measured with sox) and the text `say` speaks (speech energy of
/// about its length).
async fn the_far_end_hears_a_played_file_and_spoken_text(app: TestApp) {
    let acct = app.account().await;
    let tone = ready_audio(&app, &acct, &tone_wav(1000.0, 1500)).await;
    let script = format!(
        "branches:\n  inbound-call:\n    actions:\n      - action: play@v1\n        params: {{ media: \"{tone}\" }}\n      - action: say@v2\n        params: {{ what: \"Thank you for calling. Your call matters to us.\" }}\n      - action: hangup@v1\n"
    );
    let (number, _) = number_with(&app, &acct, &script).await;
    let phone = Baresip::start(&tone_wav(0.0, 30_000), "+447700900999").await;
    phone
        .command("dial", &format!("sip:{number}@{}", sip_addr(&app)))
        .await;
    let callid = loop_for_call(&app, &acct).await;
    let call = ended(&app, &acct, &callid).await;
    assert_eq!(call["hangupSource"], "callee", "{call}");
    let (_dir, heard) = phone.stop().await;
    let heard = heard.first().expect("baresip recorded the call");
    let all = measure(heard, None).await;
    assert!(all.length > 2.5, "the tone and the speech: {all:?}");
    let tone = measure(heard, Some((900, 1100))).await;
    // Measured in its loudest tenth of a second: how long the call ran around it varies.
    assert!(
        tone.loudest > 0.15,
        "the 1 kHz file at about -10 dBFS: {tone:?}"
    );
    assert!((tone.frequency - 1000.0).abs() < 60.0, "{tone:?}");
    // Speech: energy spread over the voice band, outside the tone's.
    let speech = measure(heard, Some((200, 800))).await;
    assert!(speech.loudest > 0.02, "speech was heard: {speech:?}");
}

/// `record@v1` on a real call: the recording holds what the caller's phone played (a
/// 600 Hz tone, measured in the stored recording).
async fn a_voicemail_holds_what_the_caller_said(app: TestApp) {
    let acct = app.account().await;
    let script = "branches:\n  inbound-call:\n    actions:\n      - action: record@v1\n        params: { maxDuration: 2 }\n        result: $message\n      - action: hangup@v1\n";
    let (number, sid) = number_with(&app, &acct, script).await;
    let phone = Baresip::start(&tone_wav(600.0, 10_000), "+447700900999").await;
    phone
        .command("dial", &format!("sip:{number}@{}", sip_addr(&app)))
        .await;
    let run = wait_run(&app, &acct, &sid).await;
    let _ = phone.stop().await;
    let recording = run["variables"]["$message"]["sid"]
        .as_str()
        .unwrap_or_else(|| panic!("no recording: {run}"))
        .to_owned();
    let wav = reqwest::Client::new()
        .get(app.url(&format!("/v2.0/recordings/{recording}/file")))
        .header("x-api-key", &acct.api_key)
        .send()
        .await
        .expect("download")
        .bytes()
        .await
        .expect("bytes");
    let dir = tempfile::tempdir().expect("dir");
    let file = dir.path().join("message.wav");
    std::fs::write(&file, &wav).expect("write");
    let m = measure(&file, Some((500, 700))).await;
    assert!(m.length > 1.5 && m.length < 2.5, "about 2 s: {m:?}");
    assert!(m.rms > 0.05, "the caller's tone: {m:?}");
    assert!((m.frequency - 600.0).abs() < 50.0, "{m:?}");
}

/// The published forwarding-with-recording scenario on real calls: a baresip phone calls
/// the number, the scenario dials a second baresip through the trunk that routes it, the
/// call is answered when it answers and bridged; each phone hears the other (600 Hz one
/// way, 1 kHz the other), and the call recording holds both.
async fn a_forwarded_call_is_bridged_through_a_trunk_and_recorded(app: TestApp) {
    let acct = app.account().await;
    let callee = Baresip::start(&tone_wav(1000.0, 20_000), "+33612345678").await;
    let mut trunk = TrunkConfig::new("out", "127.0.0.1", callee.sip.port());
    trunk.prefixes = vec!["+3361".into()];
    let (status, v) = send(app.admin(Method::POST, "/admin/sip").json(&trunk)).await;
    assert_eq!(status, 201, "{v}");
    let published = include_str!("../../../actions/tests/fixtures/forwarding-record.yaml");
    let script = published
        .replace("\"+447700900200\"", "\"+33612345678\"")
        .replace("https://push.example.org", "http://127.0.0.1:9");
    let (number, _) = number_with(&app, &acct, &script).await;
    let caller = Baresip::start(&tone_wav(600.0, 20_000), "+447700900999").await;
    caller
        .command("dial", &format!("sip:{number}@{}", sip_addr(&app)))
        .await;
    let callid = loop_for_call(&app, &acct).await;
    // Two seconds of conversation, then the caller hangs up.
    tokio::time::sleep(Duration::from_secs(2)).await;
    caller.command("hangup", "").await;
    let call = ended(&app, &acct, &callid).await;
    assert_eq!(call["hangupSource"], "caller", "{call}");
    let calls = calls_of(&app, &acct).await;
    assert_eq!(
        calls.len(),
        2,
        "the caller's leg and the dialled leg: {calls:?}"
    );
    assert_eq!(calls[1].1, "out", "dialled through the trunk of its prefix");
    let (_a, heard_by_caller) = caller.stop().await;
    let (_b, heard_by_callee) = callee.stop().await;
    let caller_heard = measure(
        heard_by_caller.first().expect("caller recorded"),
        Some((900, 1100)),
    )
    .await;
    assert!(
        caller_heard.loudest > 0.1,
        "the caller heard the callee: {caller_heard:?}"
    );
    let callee_heard = measure(
        heard_by_callee.first().expect("callee recorded"),
        Some((500, 700)),
    )
    .await;
    assert!(
        callee_heard.loudest > 0.1,
        "the callee heard the caller: {callee_heard:?}"
    );
    // The call recording: both parties.
    let recording = wait_recording(&app, &acct, &callid).await;
    let dir = tempfile::tempdir().expect("dir");
    let file = dir.path().join("call.wav");
    std::fs::write(&file, &recording).expect("write");
    let one = measure(&file, Some((500, 700))).await;
    let other = measure(&file, Some((900, 1100))).await;
    assert!(
        one.rms > 0.03 && other.rms > 0.03,
        "both parties recorded: {one:?} {other:?}"
    );
}

/// The audio of the call recording of `callid` (polled, at most 20 s).
async fn wait_recording(app: &TestApp, acct: &TestAccount, callid: &str) -> Vec<u8> {
    for _ in 0..400 {
        let (_, found) = send(app.req(
            acct,
            Method::GET,
            &format!("/v2.0/recordings?callid={callid}"),
        ))
        .await;
        if let Some(sid) = found["hits"]
            .as_array()
            .and_then(|h| h.first())
            .and_then(|r| r["sid"].as_str())
        {
            let bytes = reqwest::Client::new()
                .get(app.url(&format!("/v2.0/recordings/{sid}/file")))
                .header("x-api-key", &acct.api_key)
                .send()
                .await
                .expect("download")
                .bytes()
                .await
                .expect("bytes");
            return bytes.to_vec();
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("no recording of {callid}");
}

/// A dial through a trunk whose far end answers busy reports `busy`; one that never
/// answers is cancelled at its timeout and reports `no-answer`.
async fn a_dial_through_a_trunk_reports_busy_and_cancels_unanswered_targets(app: TestApp) {
    let acct = app.account().await;
    let far = crate::voice_peers::ports();
    let mut trunk = TrunkConfig::new("far", "127.0.0.1", far);
    trunk.prefixes = vec!["+33".into()];
    let (status, v) = send(app.admin(Method::POST, "/admin/sip").json(&trunk)).await;
    assert_eq!(status, 201, "{v}");
    let script = "branches:\n  inbound-call:\n    actions:\n      - action: dial@v1\n        params: { targets: [ { number: \"+33612345678\", timeout: 2 } ] }\n        result: $dial\n      - action: hangup@v1\n";
    let (number, sid) = number_with(&app, &acct, script).await;
    for (answer, want) in [("486", "busy"), ("none", "no-answer")] {
        let target = uas(answer);
        let far_end = crate::voice_peers::Sipp::serve(&target, far);
        let caller = Sipp::call(
            &answered_call(&offer(true), BYE_RECEIVED),
            sip_addr(&app),
            &number,
            "127.0.0.1",
            &[],
        );
        let (ok, errors) = caller.finish().await;
        assert!(ok, "{want}: the caller: {errors}");
        let (ok, errors) = far_end.finish().await;
        assert!(ok, "{want}: the far end: {errors}");
        let run = wait_run(&app, &acct, &sid).await;
        assert_eq!(run["variables"]["$dial"]["status"], want, "{run}");
    }
}

/// A SIPp far end answering an INVITE with `answer` (a status), or never (`none`: it
/// rings until cancelled).
fn uas(answer: &str) -> String {
    let reply = |status: &str, text: &str| {
        format!(
            "  <send><![CDATA[\n      SIP/2.0 {status} {text}\n      [last_Via:]\n      [last_From:]\n      [last_To:];tag=[pid]SIPpTag01[call_number]\n      [last_Call-ID:]\n      [last_CSeq:]\n      Contact: <sip:[local_ip]:[local_port]>\n      Content-Length: 0\n  ]]></send>\n"
        )
    };
    let end = if answer == "none" {
        format!(
            "{}  <recv request=\"CANCEL\" timeout=\"20000\"/>\n{}{}  <recv request=\"ACK\"/>\n",
            reply("180", "Ringing"),
            reply("200", "OK"),
            // The INVITE's answer carries the INVITE's CSeq.
            reply("487", "Request Terminated").replace("[last_CSeq:]", "CSeq: [$seq] INVITE")
        )
    } else {
        format!("{}  <recv request=\"ACK\"/>\n", reply(answer, "Busy Here"))
    };
    format!(
        "<?xml version=\"1.0\" encoding=\"ISO-8859-1\" ?>\n<scenario name=\"far end\">\n  <recv request=\"INVITE\" timeout=\"20000\"><action><ereg regexp=\"([0-9]+) INVITE\" search_in=\"hdr\" header=\"CSeq:\" assign_to=\"all,seq\"/></action></recv>\n{end}  <Reference variables=\"all,seq\"/>\n</scenario>\n"
    )
}

/// Trunks added through `/admin/sip` are listed with their health and routed at once; a
/// trunk of the file cannot be removed there; bad trunks are refused by field.
async fn trunks_are_added_listed_and_removed_by_the_operator(app: TestApp) {
    let mut bad = TrunkConfig::new("bad name", "", 0);
    bad.prefixes = vec!["33".into()];
    let (status, v) = send(app.admin(Method::POST, "/admin/sip").json(&bad)).await;
    assert_eq!(status, 400, "{v}");
    let (status, v) = send(
        app.admin(Method::POST, "/admin/sip")
            .json(&json!({"name": "x", "host": "h", "surprise": 1})),
    )
    .await;
    assert_eq!(status, 400, "{v}");
    let mut good = TrunkConfig::new("carrier", "127.0.0.1", 5090);
    good.username = Some("user".into());
    good.password = Some("secret-password".into());
    let (status, v) = send(app.admin(Method::POST, "/admin/sip").json(&good)).await;
    assert_eq!(status, 201, "{v}");
    assert_eq!(v["config"]["password"], "********", "{v}");
    let (status, again) = send(app.admin(Method::POST, "/admin/sip").json(&good)).await;
    assert_eq!(status, 400, "{again}");
    let (status, list) = send(app.admin(Method::GET, "/admin/sip")).await;
    assert_eq!(status, 200);
    assert!(list["node"]["listen"].is_string(), "{list}");
    let names: Vec<&str> = list["trunks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["config"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, [TRUNK, "carrier"], "{list}");
    assert!(!list.to_string().contains("secret-password"), "{list}");
    assert_eq!(
        list["trunks"][1]["health"]["addresses"][0], "127.0.0.1",
        "{list}"
    );
    let (status, _) = send(app.admin(Method::DELETE, &format!("/admin/sip/{TRUNK}"))).await;
    assert_eq!(status, 400, "the file's trunk stays");
    let (status, _) = send(app.admin(Method::DELETE, "/admin/sip/carrier")).await;
    assert_eq!(status, 204);
    let (status, _) = send(app.admin(Method::DELETE, "/admin/sip/carrier")).await;
    assert_eq!(status, 404);
    let (_, metrics) = {
        let resp = app
            .anon(Method::GET, "/metrics")
            .send()
            .await
            .expect("metrics");
        (resp.status(), resp.text().await.expect("text"))
    };
    assert!(metrics.contains("dialtone_sip_calls 0"), "{metrics}");
    assert!(metrics.trim_end().ends_with("# EOF"), "{metrics}");
    let _ = BYE_SENT;
}

/// A gather's spoken prompt stops at the caller's first key (barge-in): with a prompt of
/// some ten seconds and a key after one, dialtone's BYE comes within four.
async fn a_key_cuts_a_gather_prompt_short(app: TestApp) {
    let acct = app.account().await;
    let long = "This is a long prompt that takes a good ten seconds to say, so that a caller who knows what to press does not have to listen to all of it before the menu takes the key.";
    let script = format!(
        "branches:\n  inbound-call:\n    actions:\n      - action: gather@v2\n        params: {{ maxDigits: 1, timeout: 20, prompt: {{ what: \"{long}\" }} }}\n        result: $key\n      - action: hangup@v1\n"
    );
    let (number, sid) = number_with(&app, &acct, &script).await;
    let middle = format!(
        "  <pause milliseconds=\"1000\"/>\n  <nop><action><exec play_pcap_audio=\"{{pcaps}}/dtmf_2833_5.pcap\"/></action></nop>\n{}",
        BYE_RECEIVED.replace("timeout=\"30000\"", "timeout=\"4000\"")
    );
    let (ok, errors) = sipp_caller(&app, &number, true, &middle).await;
    assert!(ok, "the BYE came late, or not at all: {errors}");
    let run = wait_run(&app, &acct, &sid).await;
    assert_eq!(run["variables"]["$key"]["digits"], "5", "{run}");
}

/// Record-by-phone on a real call: a baresip phone calls the number `PUT
/// /audio-files/{sid}/phone-id` gave, keys the code, plays a 700 Hz tone after the beep and
/// presses #: the file's content becomes that tone.
async fn an_audio_file_is_recorded_by_phone_over_a_real_call(app: TestApp) {
    let acct = app.account().await;
    let sid = ready_audio(&app, &acct, &tone_wav(300.0, 500)).await;
    let (status, id) = send(app.req(
        &acct,
        Method::PUT,
        &format!("/v2.0/audio-files/{sid}/phone-id?country=GB"),
    ))
    .await;
    assert_eq!(status, 201, "{id}");
    let (line, code) = (
        id["phoneNumber"].as_str().expect("number").to_owned(),
        id["code"].as_str().expect("code").to_owned(),
    );
    let phone = Baresip::start(&tone_wav(700.0, 30_000), "+447700900999").await;
    phone
        .command("dial", &format!("sip:{line}@{}", sip_addr(&app)))
        .await;
    phone.wait("CALL_ESTABLISHED").await;
    phone.command("sndcode", &code).await;
    // baresip keys the code in about two seconds; then the beep, then two seconds of the
    // tone, then #.
    tokio::time::sleep(Duration::from_millis(4500)).await;
    phone.command("sndcode", "#").await;
    phone.wait("CALL_CLOSED").await;
    let _ = phone.stop().await;
    let mut file = Value::Null;
    for _ in 0..100 {
        drain(&app).await;
        file = crate::audio_files::get(&app, &acct, &sid).await;
        if file["status"] == "ready" && file["source"] == "phone" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(file["source"], "phone", "{file}");
    assert_eq!(file["status"], "ready", "{file}");
    let wav = reqwest::Client::new()
        .get(app.url(&format!("/v2.0/audio-files/{sid}/file")))
        .header("x-api-key", &acct.api_key)
        .send()
        .await
        .expect("download")
        .bytes()
        .await
        .expect("bytes");
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("recorded.wav");
    std::fs::write(&path, &wav).expect("write");
    let m = measure(&path, Some((600, 800))).await;
    assert!(m.length > 1.0, "{m:?}");
    assert!(
        m.rms > 0.05 && (m.frequency - 700.0).abs() < 60.0,
        "the phone's tone: {m:?}"
    );
}

/// A trunk with `register = true` registers with its credentials: SIPp as the registrar
/// challenges the REGISTER (401) and checks the digest answer before it grants it; the
/// operator then sees the trunk registered.
async fn a_trunk_that_asks_for_it_is_registered_with_its_credentials(app: TestApp) {
    let port = crate::voice_peers::ports();
    let reply = |status: &str, extra: &str| {
        format!(
            "  <send><![CDATA[\n      SIP/2.0 {status}\n      [last_Via:]\n      [last_From:]\n      [last_To:];tag=[pid]SIPpTag01[call_number]\n      [last_Call-ID:]\n      [last_CSeq:]\n{extra}      Content-Length: 0\n  ]]></send>\n"
        )
    };
    let registrar = format!(
        "<?xml version=\"1.0\" encoding=\"ISO-8859-1\" ?>\n<scenario name=\"registrar\">\n  <recv request=\"REGISTER\" timeout=\"20000\"/>\n{}  <recv request=\"REGISTER\" timeout=\"20000\">\n    <action><verifyauth assign_to=\"valid\" username=\"dialtone\" password=\"s3cret-pass\"/></action>\n  </recv>\n  <nop hide=\"true\" test=\"valid\" next=\"granted\"/>\n  <recv request=\"NEVER\" timeout=\"100\"/>\n  <label id=\"granted\"/>\n{}</scenario>\n",
        reply(
            "401 Unauthorized",
            "      WWW-Authenticate: Digest realm=\"carrier\", nonce=\"47364c23432d2e131a5fb210812c\", algorithm=MD5\n"
        ),
        reply(
            "200 OK",
            "      [last_Contact:];expires=600\n      Expires: 600\n"
        ),
    );
    let sipp = Sipp::serve(&registrar, port);
    let mut trunk = TrunkConfig::new("carrier", "127.0.0.1", port);
    trunk.username = Some("dialtone".into());
    trunk.password = Some("s3cret-pass".into());
    trunk.register = true;
    trunk.register_secs = 600;
    let (status, v) = send(app.admin(Method::POST, "/admin/sip").json(&trunk)).await;
    assert_eq!(status, 201, "{v}");
    let (ok, errors) = sipp.finish().await;
    assert!(ok, "the registrar granted the registration: {errors}");
    let mut health = Value::Null;
    for _ in 0..100 {
        let (_, list) = send(app.admin(Method::GET, "/admin/sip")).await;
        health = list["trunks"][1]["health"].clone();
        if health["registered"] == true {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(health["registered"], true, "{health}");
    assert!(health["last_error"].is_null(), "{health}");
}

async fn a_silent_far_end_is_hung_up_after_the_media_timeout(app: TestApp) {
    let acct = app.account().await;
    let script = "branches:\n  inbound-call:\n    actions:\n      - action: wait@v1\n        params: { seconds: 600 }\n";
    let (number, _) = number_with(&app, &acct, script).await;
    let middle = BYE_RECEIVED.replace("timeout=\"30000\"", "timeout=\"8000\"");
    let (ok, errors) = sipp_caller(&app, &number, true, &middle).await;
    assert!(ok, "no BYE within 8 s of silence: {errors}");
    let calls = calls_of(&app, &acct).await;
    let call = ended(&app, &acct, &calls[0].0).await;
    assert_eq!(call["hangupCause"], 102, "{call}");
    assert_eq!(call["hangupSource"], "system", "{call}");
}

/// The start of a request of SIPp's call within its dialog (to our tag), up to its
/// `Max-Forwards`: what follows is the request's own headers and body.
fn in_dialog(method: &str, cseq: u32) -> String {
    format!(
        r#"      {method} sip:[service]@[remote_ip]:[remote_port] SIP/2.0
      Via: SIP/2.0/[transport] [local_ip]:[local_port];branch=[branch]
      From: <sip:+447700900999@[local_ip]:[local_port]>;tag=[pid]SIPpTag00[call_number]
      To: <sip:[service]@[remote_ip]:[remote_port]>[peer_tag_param]
      Call-ID: [call_id]
      CSeq: {cseq} {method}
      Contact: sip:sipp@[local_ip]:[local_port]
      Max-Forwards: 70
"#
    )
}

/// A new offer (re-INVITE, CSeq `cseq`) of PCMU with telephone-events in `direction`.
fn reoffer(direction: &str, cseq: u32) -> String {
    format!(
        r#"{}      Content-Type: application/sdp
      Content-Length: [len]

      v=0
      o=user1 53655765 2353687638 IN IP[local_ip_type] [local_ip]
      s=-
      c=IN IP[media_ip_type] [media_ip]
      t=0 0
      m=audio [media_port] RTP/AVP 0 101
      a=rtpmap:0 PCMU/8000
      a=rtpmap:101 telephone-event/8000
      a={direction}
"#,
        in_dialog("INVITE", cseq)
    )
}

/// The key 7 sent as SIP INFO (`application/dtmf-relay`, CSeq `cseq`), and its 200.
fn key_by_info(cseq: u32) -> String {
    format!(
        r#"  <send retrans="500"><![CDATA[
{}      Content-Type: application/dtmf-relay
      Content-Length: [len]

      Signal=7
      Duration=160
  ]]></send>
  <recv response="200"/>
"#,
        in_dialog("INFO", cseq)
    )
}

/// The scenario of the re-INVITE tests: it gathers one key (to show the call goes on
/// after the new offer) and hangs up.
const ONE_KEY_THEN_HANGUP: &str = "branches:\n  inbound-call:\n    actions:\n      - action: gather@v2\n        params: { maxDigits: 1, timeout: 20 }\n        result: $key\n      - action: hangup@v1\n";

/// Within the call, the far end puts it on hold with a new offer (re-INVITE with
/// `sendonly`, answered `recvonly`) and takes it back (`sendrecv`): each is answered 200
/// with our SDP; a key sent as SIP INFO
/// (`application/dtmf-relay`) reaches the scenario's gather.
async fn a_new_offer_within_the_call_is_answered_and_keys_come_by_sip_info(app: TestApp) {
    let acct = app.account().await;
    let (number, sid) = number_with(&app, &acct, ONE_KEY_THEN_HANGUP).await;
    let reinvite = |direction: &str, answered: &str, cseq: u32| {
        let offer = reoffer(direction, cseq);
        format!(
            r#"  <send retrans="500"><![CDATA[
{offer}  ]]></send>
  <recv response="100" optional="true"/>
  <recv response="200">
    <action>
      <ereg regexp="m=audio [0-9]+ RTP/AVP 0" search_in="body" check_it="true" assign_to="sdp"/>
      <ereg regexp="a={answered}" search_in="body" check_it="true" assign_to="dir"/>
    </action>
  </recv>
  <Reference variables="sdp,dir"/>
  <send><![CDATA[
      ACK sip:[service]@[remote_ip]:[remote_port] SIP/2.0
      Via: SIP/2.0/[transport] [local_ip]:[local_port];branch=[branch]
      From: <sip:+447700900999@[local_ip]:[local_port]>;tag=[pid]SIPpTag00[call_number]
      To: <sip:[service]@[remote_ip]:[remote_port]>[peer_tag_param]
      Call-ID: [call_id]
      CSeq: {cseq} ACK
      Content-Length: 0
  ]]></send>
"#
        )
    };
    let info = key_by_info(4);
    let middle = format!(
        "{}{}{info}{BYE_RECEIVED}",
        reinvite("sendonly", "recvonly", 2),
        reinvite("sendrecv", "sendrecv", 3)
    );
    let (ok, errors) = sipp_caller(&app, &number, true, &middle).await;
    assert!(ok, "SIPp: {errors}");
    let run = wait_run(&app, &acct, &sid).await;
    assert_eq!(run["variables"]["$key"]["digits"], "7", "{run}");
}

/// A far end that sends its re-INVITE before the ACK of our 2xx, on the wire: the new
/// offer waits for the ACK (which confirms the call) and is then answered 200 with our
/// SDP, not refused and not left unanswered (`early_offer`); the call goes on (a key by
/// SIP INFO reaches the scenario).
async fn a_new_offer_sent_before_the_ack_is_answered_once_the_ack_came(app: TestApp) {
    let acct = app.account().await;
    let (number, sid) = number_with(&app, &acct, ONE_KEY_THEN_HANGUP).await;
    let (offer_first, ack_first, ack_second, info) = (
        reoffer("sendonly", 2),
        in_dialog("ACK", 1),
        in_dialog("ACK", 2),
        key_by_info(3),
    );
    let scenario = format!(
        r#"<?xml version="1.0" encoding="ISO-8859-1" ?>
<scenario name="dialtone re-INVITE before the ACK">
  <send retrans="500"><![CDATA[{INVITE_HEAD}{offer}
  ]]></send>
  <recv response="100" optional="true"/>
  <recv response="180" optional="true"/>
  <recv response="183" optional="true"/>
  <recv response="200"/>
  <send><![CDATA[
{offer_first}  ]]></send>
  <send><![CDATA[
{ack_first}      Content-Length: 0
  ]]></send>
  <recv response="100" optional="true"/>
  <recv response="200">
    <action>
      <ereg regexp="m=audio [0-9]+ RTP/AVP 0" search_in="body" check_it="true" assign_to="sdp"/>
      <ereg regexp="a=recvonly" search_in="body" check_it="true" assign_to="dir"/>
    </action>
  </recv>
  <Reference variables="sdp,dir"/>
  <send><![CDATA[
{ack_second}      Content-Length: 0
  ]]></send>
{info}{BYE_RECEIVED}</scenario>
"#,
        offer = offer(true),
    );
    let (ok, errors) = Sipp::call(&scenario, sip_addr(&app), &number, "127.0.0.1", &[])
        .finish()
        .await;
    assert!(ok, "SIPp: {errors}");
    let run = wait_run(&app, &acct, &sid).await;
    assert_eq!(run["variables"]["$key"]["digits"], "7", "{run}");
}

/// An address no trunk allows that keeps calling is refused ten times in a minute, then
/// not answered at all (nothing to amplify, no state kept).
async fn a_stranger_who_keeps_calling_is_no_longer_answered(app: TestApp) {
    let acct = app.account().await;
    let (number, _) = number_with(
        &app,
        &acct,
        "branches:\n  inbound-call:\n    actions:\n      - action: hangup@v1\n",
    )
    .await;
    for i in 0..10 {
        let (ok, errors) = Sipp::call(
            &refused_call(403, "cause=21"),
            sip_addr(&app),
            &number,
            "127.0.0.3",
            &[],
        )
        .finish()
        .await;
        assert!(ok, "refusal {i}: {errors}");
    }
    let (ok, _) = Sipp::call(
        &refused_call(403, "cause=21"),
        sip_addr(&app),
        &number,
        "127.0.0.3",
        &["-recv_timeout", "2000"],
    )
    .finish()
    .await;
    assert!(!ok, "the eleventh INVITE of the minute is not answered");
    assert!(calls_of(&app, &acct).await.is_empty());
}

/// The round trip of speech: a text spoken by the neural voice (an audio file made from it)
/// is what a baresip phone says into a scenario that records the call (`startRecording`
/// with a transcription) and takes a voicemail (`record@v1` with one); the workers
/// transcribe both: the voicemail's transcript and the text the `ready` event gives the
/// scenario hold the words.
async fn words_spoken_by_the_neural_voice_are_recorded_and_transcribed_back(app: TestApp) {
    let acct = app.account().await;
    let text = "Please call me back about the delivery tomorrow morning.";
    let file = crate::speech::spoken_file(&app, &acct, text, "TTS_EN-US_JOE").await;
    let wav = reqwest::Client::new()
        .get(app.url(&format!("/v2.0/audio-files/{file}/file")))
        .header("x-api-key", &acct.api_key)
        .send()
        .await
        .expect("download")
        .bytes()
        .await
        .expect("bytes");
    // A second of silence first, for the beep, then the words; the phone hangs up when they end.
    let mut spoken = dialtone_media::wav_samples(&tone_wav(0.0, 1_000)).expect("silence");
    spoken.extend(dialtone_media::wav_samples(&wav).expect("samples"));
    let script = "branches:\n  inbound-call:\n    actions:\n      - action: startRecording@v1\n        params: { transcription: { language: en-US } }\n        events:\n          ready:\n            - action: javascript@v1\n              params: { code: \"$heard = recording.transcript\" }\n      - action: record@v1\n        params: { maxDuration: 15, transcription: { language: en-US } }\n        result: $message\n";
    let (number, sid) = number_with(&app, &acct, script).await;
    let phone = Baresip::start(&dialtone_media::pcm_wav(&spoken), "+447700900999").await;
    phone
        .command("dial", &format!("sip:{number}@{}", sip_addr(&app)))
        .await;
    phone.wait("CALL_CLOSED").await;
    let _ = phone.stop().await;
    let calls = calls_of(&app, &acct).await;
    ended(&app, &acct, &calls[0].0).await;
    // The workers transcribe (one recording at a time on a node).
    let mut run = Value::Null;
    for _ in 0..10 {
        app.tick().await;
        run = newest_run(&app, &acct, &sid, |_| true).await;
        if run["variables"]["$heard"].is_string() {
            break;
        }
    }
    let words = |said: &str| {
        let said = said.to_ascii_lowercase();
        ["call", "back", "delivery", "tomorrow"]
            .iter()
            .filter(|w| said.contains(*w))
            .count()
    };
    let heard = run["variables"]["$heard"]
        .as_str()
        .unwrap_or_else(|| panic!("{run}"));
    assert!(
        words(heard) >= 3,
        "the call recording's transcript: {heard:?}"
    );
    assert_eq!(run["status"], "completed", "{run}");
    let message = run["variables"]["$message"]["sid"]
        .as_str()
        .expect("voicemail")
        .to_owned();
    // The account's recordings are transcribed one after the other: the voicemail may
    // still be waiting for its turn.
    let mut recording = Value::Null;
    for _ in 0..10 {
        recording = send(app.req(&acct, Method::GET, &format!("/v2.0/recordings/{message}")))
            .await
            .1;
        if recording["transcription"]["status"] != "pending" {
            break;
        }
        app.tick().await;
    }
    assert_eq!(recording["transcription"]["status"], "ready", "{recording}");
    assert_eq!(
        recording["transcription"]["language"], "en-US",
        "{recording}"
    );
    let transcript = recording["transcript"].as_str().unwrap_or_default();
    assert!(
        words(transcript) >= 3,
        "the voicemail's transcript: {transcript:?}"
    );
    let updates = app.events(&acct.sid, "media.recording.status_update").await;
    assert_eq!(
        updates.len(),
        2,
        "one per transcribed recording: {updates:?}"
    );
    assert!(
        updates.iter().all(|u| u["transcription_status"] == "ready"),
        "{updates:?}"
    );
}
