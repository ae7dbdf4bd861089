//! The web console: its page under a strict Content-Security-Policy, sessions (sign-in by
//! password, API key or admin token; the cookie; CSRF; sign-out; the one-time link), its
//! keyset lists, and in a real headless Chromium: sign-in, every view, the scenario
//! editor's error at its line, a sandbox SMS arriving live with its webhook delivery, the
//! store's prefixes, and the operator's actions (create, credit, suspend) by keyboard.

use reqwest::Method;
use reqwest::header::{CONTENT_SECURITY_POLICY, COOKIE, SET_COOKIE};
use serde_json::{Value, json};

use crate::both_backends;
use crate::helpers::{ADMIN_TOKEN, TestAccount, TestApp, assert_error, send};
use crate::receiver::Receiver;
use crate::webdriver::{Browser, available};

both_backends!(
    the_page_is_served_under_a_strict_policy,
    sessions_need_their_csrf_token_and_end_when_signed_out,
    the_operator_signs_in_with_the_admin_token_and_accounts_cannot,
    lists_page_by_keyset_and_a_delivery_shows_its_request,
    filtered_lists_match_the_status_and_the_text,
    the_console_works_in_a_real_browser,
    the_operator_drives_the_console_by_keyboard_in_a_real_browser,
    live_feeds_bring_their_accounts_events_and_resume_where_they_left,
    a_flood_of_events_leaves_a_feed_current,
    sms_moves_nobody_receives_are_written_while_a_feed_watches,
    a_feed_opened_before_a_planned_delivery_shows_it,
);

/// Signs in through the API; returns the cookie header and the CSRF token.
async fn sign_in(app: &TestApp, body: Value) -> (String, String) {
    let res = app
        .anon(Method::POST, "/console/session")
        .json(&body)
        .send()
        .await
        .expect("sign in");
    assert_eq!(res.status(), 200);
    let cookie = res
        .headers()
        .get(SET_COOKIE)
        .and_then(|v| v.to_str().ok())
        .expect("a cookie")
        .to_owned();
    assert!(cookie.contains("HttpOnly"), "{cookie}");
    assert!(cookie.contains("SameSite=Strict"), "{cookie}");
    let pair = cookie.split(';').next().expect("pair").to_owned();
    let session: Value = res.json().await.expect("json");
    let csrf = session["csrf"].as_str().expect("csrf").to_owned();
    (pair, csrf)
}

/// One server-sent event of a live feed: its id and its `{type, data}`.
struct Change {
    id: i64,
    change: Value,
}

/// A live feed opened with the session `cookie`, read event by event.
struct LiveFeed {
    res: reqwest::Response,
    buffer: String,
}

impl LiveFeed {
    async fn open(app: &TestApp, cookie: &str, resume: Option<i64>) -> Self {
        let mut req = app
            .anon(Method::GET, "/console/events")
            .header(COOKIE, cookie);
        if let Some(id) = resume {
            req = req.header("last-event-id", id.to_string());
        }
        let res = req.send().await.expect("feed");
        assert_eq!(res.status(), 200);
        Self {
            res,
            buffer: String::new(),
        }
    }

    /// The next change, waiting at most 10 s (the node's reader looks every half second).
    async fn next(&mut self) -> Change {
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let block: String = self.buffer.drain(..end + 2).collect();
                let field = |name: &str| {
                    block
                        .lines()
                        .find_map(|l| l.strip_prefix(name))
                        .map(|v| v.trim().to_owned())
                };
                let (Some(id), Some(data)) = (field("id:"), field("data:")) else {
                    continue; // a keep-alive comment
                };
                assert_eq!(field("event:").as_deref(), Some("change"), "{block}");
                return Change {
                    id: id.parse().expect("numeric id"),
                    change: serde_json::from_str(&data).expect("JSON"),
                };
            }
            let chunk = tokio::time::timeout_at(deadline, self.res.chunk())
                .await
                .expect("a change within 10 s")
                .expect("the stream")
                .expect("the stream still open");
            self.buffer
                .push_str(std::str::from_utf8(&chunk).expect("UTF-8"));
        }
    }
}

/// Tops `acct` up by `amount` (its `billing.credit` event).
async fn top_up(app: &TestApp, acct: &TestAccount, amount: &str) {
    let (status, r) = send(
        app.admin(
            Method::POST,
            &format!("/admin/accounts/{}/credit", acct.sid),
        )
        .json(&json!({ "amount": amount })),
    )
    .await;
    assert_eq!(status, 200, "{r}");
}

/// Events are not indexed by account: one reader a node reads every new event and hands
/// each open feed its account's. A feed gets its account's events in order and no other
/// account's; one resumed with `Last-Event-ID` first gets what it missed.
async fn live_feeds_bring_their_accounts_events_and_resume_where_they_left(app: TestApp) {
    let acct = app.account().await;
    let other = app.account().await;
    let (cookie, _) = sign_in(&app, json!({"apiKey": acct.api_key})).await;
    // An event before the feed opens is not sent: a feed starts from now.
    top_up(&app, &acct, "1.00").await;
    let mut feed = LiveFeed::open(&app, &cookie, None).await;
    top_up(&app, &other, "5.00").await;
    top_up(&app, &acct, "2.00").await;
    top_up(&app, &other, "5.00").await;
    top_up(&app, &acct, "3.00").await;
    let first = feed.next().await;
    assert_eq!(first.change["type"], "billing.credit");
    assert_eq!(first.change["data"]["credited"], "2.00", "{}", first.change);
    let second = feed.next().await;
    assert_eq!(
        second.change["data"]["credited"], "3.00",
        "{}",
        second.change
    );
    assert!(second.id > first.id);
    drop(feed);

    // While no feed is open, two more; the feed resumed after the first sends both (and
    // not the other account's in between), then what follows.
    top_up(&app, &acct, "4.00").await;
    top_up(&app, &other, "5.00").await;
    top_up(&app, &acct, "6.00").await;
    let mut resumed = LiveFeed::open(&app, &cookie, Some(first.id)).await;
    top_up(&app, &acct, "7.00").await;
    let mut credited = Vec::new();
    let mut last = first.id;
    for _ in 0..4 {
        let change = resumed.next().await;
        assert!(change.id > last, "in order, once each");
        last = change.id;
        credited.push(change.change["data"]["credited"].clone());
    }
    assert_eq!(
        credited,
        [json!("3.00"), json!("4.00"), json!("6.00"), json!("7.00")]
    );

    // The other account's own feed has only its events.
    let (other_cookie, _) = sign_in(&app, json!({"apiKey": other.api_key})).await;
    let mut others = LiveFeed::open(&app, &other_cookie, Some(0)).await;
    for _ in 0..3 {
        let change = others.next().await;
        assert_eq!(
            change.change["data"]["credited"], "5.00",
            "{}",
            change.change
        );
    }
}

/// Sends one SMS and moves it through its four statuses; its sid as its events name it.
async fn sent_and_delivered(app: &TestApp, acct: &TestAccount) -> String {
    let sid = sent(app, acct, 1).await.remove(0);
    for _ in 0..4 {
        app.tick().await;
        app.clock.advance_ms(200);
    }
    sid.to_uppercase()
}

/// The status moves of SMS `sid` a feed brings next, in order, and the last one's id.
async fn moves_of(feed: &mut LiveFeed, sid: &str) -> (Vec<String>, i64) {
    let mut statuses = Vec::new();
    let mut last = 0;
    for _ in 0..4 {
        let change = feed.next().await;
        assert_eq!(
            change.change["type"], "sms.mt.status_update",
            "{}",
            change.change
        );
        assert_eq!(change.change["data"]["hash"], sid, "{}", change.change);
        statuses.push(change.change["data"]["status"].as_str().unwrap().to_owned());
        last = change.id;
    }
    (statuses, last)
}

/// An SMS event that no subscription and no per-SMS webhook receives is written only while a
/// console feed watches the account: none before a feed opened, every move once a feed is
/// open, and while the watch outlasts a closed feed (a reconnecting feed resumes with what
/// it missed). The watch's end: `sms::events_nobody_receives_are_written_only_while_a_feed_watches`.
async fn sms_moves_nobody_receives_are_written_while_a_feed_watches(app: TestApp) {
    let acct = app.account().await;
    let (cookie, _) = sign_in(&app, json!({"apiKey": acct.api_key})).await;
    let moves = ["PENDING", "SENT", "REMOTE_QUEUED", "DELIVERED"];
    let unwatched = sent_and_delivered(&app, &acct).await;
    let mut feed = LiveFeed::open(&app, &cookie, None).await;
    let seen = sent_and_delivered(&app, &acct).await;
    let (statuses, last) = moves_of(&mut feed, &seen).await;
    assert_eq!(statuses, moves);
    drop(feed);

    // Closed: the watch lasts, so a feed resuming finds what it missed.
    let missed = sent_and_delivered(&app, &acct).await;
    let mut resumed = LiveFeed::open(&app, &cookie, Some(last)).await;
    assert_eq!(moves_of(&mut resumed, &missed).await.0, moves);
    let recorded: Vec<String> = app
        .events(&acct.sid, "sms.mt.status_update")
        .await
        .iter()
        .map(|e| e["hash"].as_str().unwrap().to_owned())
        .collect();
    for (sid, expected) in [(&unwatched, 0), (&seen, 4), (&missed, 4)] {
        let n = recorded.iter().filter(|h| *h == sid).count();
        assert_eq!(n, expected, "events of {sid}: {recorded:?}");
    }
}

/// An SMS nobody receives the moves of is planned to its delivery as it is taken; a console
/// feed opened before the delivery makes the worker deliver it, and the feed shows the moves
/// from its opening on.
async fn a_feed_opened_before_a_planned_delivery_shows_it(app: TestApp) {
    let acct = app.account().await;
    let (cookie, _) = sign_in(&app, json!({"apiKey": acct.api_key})).await;
    let sid = sent(&app, &acct, 1).await.remove(0).to_uppercase();
    app.clock.advance_ms(100);
    let mut feed = LiveFeed::open(&app, &cookie, None).await;
    for _ in 0..4 {
        app.tick().await;
        app.clock.advance_ms(200);
    }
    let mut statuses = Vec::new();
    for _ in 0..3 {
        let change = feed.next().await;
        assert_eq!(change.change["data"]["hash"], sid, "{}", change.change);
        statuses.push(change.change["data"]["status"].as_str().unwrap().to_owned());
    }
    assert_eq!(statuses, ["SENT", "REMOTE_QUEUED", "DELIVERED"]);
}

/// Records `n` events of `account` at once, straight into the database (a flood).
async fn flood(app: &TestApp, account: &TestAccount, n: i64) {
    let sid = dialtone_domain::Sid::parse(&account.sid).expect("sid");
    app.state
        .store
        .write(move |c| {
            let id = dialtone_store::accounts::by_sid(c, &sid)?.expect("account").id;
            let numbers = match c.dialect() {
                dialtone_store::Dialect::Postgres => "SELECT generate_series(1, $2) AS i",
                dialtone_store::Dialect::Sqlite => {
                    "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < $2) \
                     SELECT i FROM n"
                }
            };
            c.execute(
                &format!(
                    "INSERT INTO events (event_id, account_id, type, data, created) \
                     SELECT 'flood' || CAST(i AS TEXT), $1, 'billing.credit', '{{}}', 0 FROM ({numbers}) f"
                ),
                dialtone_store::params![id, n],
            )
        })
        .await
        .expect("flood");
}

/// The node's one reader reads a bounded window of positions and hands out the newest
/// events in it: a feed resumed from the start after a flood of another account's events
/// gets its own account's next event, and so does one open through a flood of its own
/// account's, skipping most of the flood rather than falling behind.
async fn a_flood_of_events_leaves_a_feed_current(app: TestApp) {
    let acct = app.account().await;
    let other = app.account().await;
    let (cookie, _) = sign_in(&app, json!({"apiKey": acct.api_key})).await;
    flood(&app, &other, 25_000).await;
    top_up(&app, &acct, "1.00").await;
    // Resumed from the first position: what it missed is read from a window back, not from
    // the start, and holds its event.
    let mut feed = LiveFeed::open(&app, &cookie, Some(0)).await;
    let first = feed.next().await;
    assert_eq!(first.change["data"]["credited"], "1.00", "{}", first.change);
    // A flood of its own account's events while it is open: each read hands out the newest
    // of its window, and the feed holds at most 256 of them.
    flood(&app, &acct, 25_000).await;
    top_up(&app, &acct, "2.00").await;
    let mut changes = 0;
    loop {
        let next = feed.next().await;
        changes += 1;
        if next.change["data"]["credited"] == "2.00" {
            break;
        }
        assert!(changes < 1_000, "the feed fell behind the flood");
    }
}

async fn the_page_is_served_under_a_strict_policy(app: TestApp) {
    let res = app.anon(Method::GET, "/").send().await.expect("page");
    assert_eq!(res.status(), 200);
    let csp = res
        .headers()
        .get(CONTENT_SECURITY_POLICY)
        .and_then(|v| v.to_str().ok())
        .expect("a policy")
        .to_owned();
    for part in [
        "default-src 'none'",
        "script-src 'self'",
        "frame-ancestors 'none'",
    ] {
        assert!(csp.contains(part), "{csp}");
    }
    assert!(!csp.contains("unsafe"), "{csp}");
    let html = res.text().await.expect("html");
    assert!(html.contains("/console/assets/app.js"), "{html}");
    for file in [
        "app.js",
        "api.js",
        "ui.js",
        "views.js",
        "scenarios.js",
        "sandbox.js",
        "operator.js",
        "app.css",
    ] {
        let res = app
            .anon(Method::GET, &format!("/console/assets/{file}"))
            .send()
            .await
            .expect("asset");
        assert_eq!(res.status(), 200, "{file}");
        let body = res.text().await.expect("text");
        assert!(
            !body.contains("innerHTML"),
            "{file} writes no markup from data"
        );
    }
    let (status, err) = send(app.anon(Method::GET, "/console/assets/../Cargo.toml")).await;
    assert_eq!(status, 404, "{err}");
}

async fn sessions_need_their_csrf_token_and_end_when_signed_out(app: TestApp) {
    let acct = app.account().await;
    // A wrong password changes nothing and is refused in the contract's shape.
    let (status, err) = send(
        app.anon(Method::POST, "/console/session")
            .json(&json!({"login": acct.login, "password": "wrong"})),
    )
    .await;
    assert_error(status, &err, 401, "auth_error");
    let (status, err) = send(
        app.anon(Method::POST, "/console/session")
            .json(&json!({"login": acct.login, "apiKey": acct.api_key})),
    )
    .await;
    assert_error(status, &err, 400, "validation_error");
    let (cookie, csrf) = sign_in(
        &app,
        json!({"login": acct.login, "password": acct.password}),
    )
    .await;
    // The cookie alone is not enough: a forged cross-site request has no CSRF token.
    let (status, err) = send(
        app.anon(Method::GET, "/v2.0/numbers")
            .header(COOKIE, &cookie),
    )
    .await;
    assert_error(status, &err, 401, "auth_error");
    let (status, err) = send(
        app.anon(Method::GET, "/v2.0/numbers")
            .header(COOKIE, &cookie)
            .header("x-csrf-token", "not-it"),
    )
    .await;
    assert_error(status, &err, 401, "auth_error");
    let with = |m: Method, p: &str| {
        app.anon(m, p)
            .header(COOKIE, &cookie)
            .header("x-csrf-token", &csrf)
    };
    let (status, numbers) = send(with(Method::GET, "/v2.0/numbers")).await;
    assert_eq!(status, 200, "{numbers}");
    let (status, me) = send(
        app.anon(Method::GET, "/console/session")
            .header(COOKIE, &cookie),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(me["account"]["sid"], acct.sid.as_str());
    assert_eq!(me["csrf"], csrf.as_str());
    // Signing in with the API key works too; signing out ends only that session.
    let (other, other_csrf) = sign_in(&app, json!({"apiKey": acct.api_key})).await;
    let res = with(Method::DELETE, "/console/session")
        .send()
        .await
        .expect("out");
    assert_eq!(res.status(), 204);
    let (status, _) = send(with(Method::GET, "/v2.0/numbers")).await;
    assert_eq!(status, 401, "a signed-out session is over");
    let (status, _) = send(
        app.anon(Method::GET, "/v2.0/numbers")
            .header(COOKIE, &other)
            .header("x-csrf-token", &other_csrf),
    )
    .await;
    assert_eq!(status, 200);
    // The one-time link opens a session once.
    let path = dialtone::testing::console_link(&app.state, &acct.sid).await;
    let no_redirects = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client");
    let first = no_redirects.get(app.url(&path)).send().await.expect("link");
    assert_eq!(first.status(), 303);
    assert!(first.headers().get(SET_COOKIE).is_some());
    let again = no_redirects.get(app.url(&path)).send().await.expect("link");
    assert_eq!(again.status(), 303);
    assert!(
        again.headers().get(SET_COOKIE).is_none(),
        "a link works once"
    );
}

async fn the_operator_signs_in_with_the_admin_token_and_accounts_cannot(app: TestApp) {
    let acct = app.account().await;
    let (status, err) = send(
        app.anon(Method::POST, "/console/session")
            .json(&json!({"adminToken": "wrong"})),
    )
    .await;
    assert_error(status, &err, 401, "auth_error");
    let (admin, admin_csrf) = sign_in(&app, json!({"adminToken": ADMIN_TOKEN})).await;
    let (status, accounts) = send(
        app.anon(Method::GET, "/admin/accounts")
            .header(COOKIE, &admin)
            .header("x-csrf-token", &admin_csrf),
    )
    .await;
    assert_eq!(status, 200, "{accounts}");
    let (status, _) = send(
        app.anon(Method::GET, "/admin/accounts")
            .header(COOKIE, &admin),
    )
    .await;
    assert_eq!(
        status, 401,
        "the operator's session needs its CSRF token too"
    );
    // The operator's session is not an account's key.
    let (status, _) = send(
        app.anon(Method::GET, "/v2.0/numbers")
            .header(COOKIE, &admin)
            .header("x-csrf-token", &admin_csrf),
    )
    .await;
    assert_eq!(status, 401);
    let (cookie, csrf) = sign_in(&app, json!({"apiKey": acct.api_key})).await;
    let (status, _) = send(
        app.anon(Method::GET, "/admin/accounts")
            .header(COOKIE, &cookie)
            .header("x-csrf-token", &csrf),
    )
    .await;
    assert_eq!(status, 401, "an account's session is not the operator's");
}

/// Sends `n` SMS and returns their sids, newest first.
async fn sent(app: &TestApp, acct: &TestAccount, n: usize) -> Vec<String> {
    let mut sids = Vec::new();
    for i in 0..n {
        let (status, sms) = crate::sms::send_sms(
            app,
            acct,
            "to=%2B447700900123",
            json!({ "body": format!("hello {i}") }),
        )
        .await;
        assert_eq!(status, 202, "{sms}");
        sids.push(sms["sid"].as_str().expect("sid").to_owned());
    }
    sids.reverse();
    sids
}

/// The sids of a console list of SMS (`/console/api/sms` with `query`), in its order.
async fn listed(app: &TestApp, acct: &TestAccount, query: &str) -> Vec<String> {
    let (status, page) = send(app.req(
        acct,
        Method::GET,
        &format!("/console/api/sms?limit=50{query}"),
    ))
    .await;
    assert_eq!(status, 200, "{page}");
    page["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|s| s["sid"].as_str().expect("sid").to_owned())
        .collect()
}

/// Filters no index serves (a status, words of the text) read a window of the account's
/// SMS: on PostgreSQL from the SMS's messages, each joined to its state (migration 36).
/// Each keeps exactly the matching SMS of the account, newest first.
async fn filtered_lists_match_the_status_and_the_text(app: TestApp) {
    let acct = app.account().await;
    let other = app.account().await;
    let sids = sent(&app, &acct, 3).await;
    sent(&app, &other, 2).await;
    // Through the timetable: every SMS of both accounts delivered.
    for _ in 0..6 {
        app.clock.advance_ms(200);
        app.tick().await;
    }
    assert_eq!(listed(&app, &acct, "&status=delivered").await, sids);
    assert_eq!(
        listed(&app, &acct, "&status=failed").await,
        Vec::<String>::new()
    );
    // `sent` lists them newest first: "hello 1" is the second sent, the middle one.
    assert_eq!(
        listed(&app, &acct, "&contains=hello%201").await,
        [sids[1].clone()]
    );
    assert_eq!(
        listed(&app, &acct, "&contains=hello&status=delivered").await,
        sids
    );
    assert_eq!(
        listed(&app, &other, "&contains=hello&status=delivered")
            .await
            .len(),
        2,
        "the other account's own"
    );
}

async fn lists_page_by_keyset_and_a_delivery_shows_its_request(app: TestApp) {
    let acct = app.account().await;
    let other = app.account().await;
    let receiver = Receiver::start().await;
    let (status, hook) = send(
        app.req(
            &acct,
            Method::POST,
            "/v2.0/webhooks?type=sms.mt.status_update",
        )
        .json(&json!({"endpoint": receiver.url, "options": {"hmac_secret": "s3cret"}})),
    )
    .await;
    assert_eq!(status, 201, "{hook}");
    let sids = sent(&app, &acct, 5).await;
    sent(&app, &other, 2).await;
    let mut seen = Vec::new();
    let mut after: Option<String> = None;
    loop {
        let q = after
            .as_ref()
            .map_or(String::new(), |a| format!("&after={a}"));
        let (status, page) =
            send(app.req(&acct, Method::GET, &format!("/console/api/sms?limit=2{q}"))).await;
        assert_eq!(status, 200, "{page}");
        for s in page["items"].as_array().expect("items") {
            seen.push(s["sid"].as_str().expect("sid").to_owned());
        }
        match page["next"].as_str() {
            Some(n) => after = Some(n.to_owned()),
            None => break,
        }
    }
    assert_eq!(
        seen, sids,
        "every SMS once, newest first, none of another account's"
    );
    let (status, err) = send(app.req(&acct, Method::GET, "/console/api/sms?after=x.y")).await;
    assert_error(status, &err, 400, "validation_error");
    for _ in 0..3 {
        app.tick().await;
        app.clock.advance_ms(200);
    }
    let (status, list) = send(app.req(
        &acct,
        Method::GET,
        &format!("/console/api/sms/{}/deliveries", sids[0]),
    ))
    .await;
    assert_eq!(status, 200, "{list}");
    let first = &list["items"][0];
    assert_eq!(first["type"], "sms.mt.status_update", "{list}");
    let id = first["id"].as_i64().expect("id");
    let (status, one) =
        send(app.req(&acct, Method::GET, &format!("/console/api/deliveries/{id}"))).await;
    assert_eq!(status, 200, "{one}");
    let try0 = &one["tries"][0];
    let body = try0["request"]["body"].as_str().expect("body");
    let got = receiver
        .received()
        .into_iter()
        .find(|r| r.raw.as_ref() == body.as_bytes())
        .expect("the receiver got exactly the body shown");
    let signature = try0["request"]["headers"]
        .as_array()
        .expect("headers")
        .iter()
        .find(|h| h[0].as_str().is_some_and(|n| n.ends_with("HmacSignature")))
        .expect("signature shown")[1]
        .clone();
    let sent_signature = got
        .headers
        .iter()
        .find(|(n, _)| n.as_str().ends_with("hmacsignature"))
        .map(|(_, v)| v.to_str().expect("ascii").to_owned())
        .expect("signed");
    assert_eq!(signature, sent_signature.as_str());
    // Another account sees neither the delivery nor the SMS's.
    let (status, _) = send(app.req(
        &other,
        Method::GET,
        &format!("/console/api/deliveries/{id}"),
    ))
    .await;
    assert_eq!(status, 404);
    let (status, _) = send(app.req(
        &acct,
        Method::POST,
        &format!("/console/api/deliveries/{id}/redeliver"),
    ))
    .await;
    assert_eq!(status, 202);
    let event = first["eventId"].as_str().expect("event id").to_owned();
    let of_event = || {
        receiver
            .received()
            .into_iter()
            .filter(|r| r.json["event_id"] == event.as_str())
            .map(|r| r.json["try"].clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(of_event(), [json!(0)]);
    app.tick().await;
    assert_eq!(
        of_event(),
        [json!(0), json!(1)],
        "redelivered once, as a new try"
    );
}

async fn the_console_works_in_a_real_browser(app: TestApp) {
    if !available() {
        return;
    }
    let acct = app.account().await;
    let number = crate::sms::buy(&app, &acct, "country=GB&type=mobile").await;
    let receiver = Receiver::start().await;
    let (status, _) = send(
        app.req(&acct, Method::POST, "/v2.0/webhooks?type=sms.mo")
            .json(&json!({"endpoint": receiver.url})),
    )
    .await;
    assert_eq!(status, 201);
    let browser = Browser::start().await;
    browser.open(&app.url("/")).await;
    browser.type_in("#login", &acct.login).await;
    browser.type_in("#password", "not the password").await;
    browser.click("#signin button[type=submit]").await;
    browser
        .wait_text("#signin-error", "invalid login or password")
        .await;
    browser.type_in("#password", &acct.password).await;
    browser.click("#signin button[type=submit]").await;
    browser.wait_text("#who", &acct.sid).await;
    browser.screenshot("console-sms").await;
    // Every view draws without an error.
    for view in [
        "sms",
        "calls",
        "scenarios",
        "numbers",
        "store?country=GB",
        "audio",
        "recordings",
        "webhooks",
        "tasks",
        "billing",
        "end-users",
        "sandbox",
    ] {
        browser.open(&app.url(&format!("/#/{view}"))).await;
        // This view's section, not the one it replaces.
        let name = view.split(['?', '/']).next().unwrap_or(view);
        let drawn = format!("section[data-view={name}][data-ready]");
        browser.find(&drawn).await;
        let state = browser
            .script(
                "return document.querySelector(arguments[0]).dataset.ready",
                json!([drawn]),
            )
            .await;
        let text = browser.text("main").await;
        assert_eq!(state, "true", "view {view}: {text}");
    }
    browser.screenshot("console-sandbox").await;
    // The store: a type's prefixes, a reservation, then the purchase.
    browser
        .open(&app.url("/#/store?country=GB&type=mobile"))
        .await;
    browser
        .find("section[data-view=store][data-ready=true] #prefixes")
        .await;
    browser.wait_text("#prefixes", "+44").await;
    browser.click("#prefixes form button[type=submit]").await;
    let held = browser.wait_text("#reservation .card", "Held until").await;
    browser.screenshot("console-store").await;
    browser.click("#reservation .card button").await;
    browser
        .find("section[data-view=numbers][data-ready=true]")
        .await;
    let (_, owned) = send(app.req(&acct, Method::GET, "/v2.0/numbers")).await;
    let bought: Vec<&str> = owned["hits"]
        .as_array()
        .expect("hits")
        .iter()
        .filter_map(|n| n["e164"].as_str())
        .filter(|n| *n != number)
        .collect();
    assert_eq!(bought.len(), 1, "{owned}");
    assert!(held.contains(bought[0]), "the reservation showed {held}");
    // The editor shows the server's validation error at its line as one types.
    browser.open(&app.url("/#/scenarios/new")).await;
    browser
        .type_in(
            "#script",
            "branches:\n  inbound-call:\n    actions:\n      - action: nosuch@v1\n",
        )
        .await;
    let problem = browser.wait_text("#script-error", "Line 4").await;
    assert!(problem.contains("nosuch"), "{problem}");
    browser.screenshot("console-editor").await;
    // An inbound SMS appears live in the open list, its body as text, and its webhook
    // delivery on its page.
    browser.open(&app.url("/#/sms?direction=inbound")).await;
    browser
        .find("section[data-view=sms][data-ready=true]")
        .await;
    browser.find("#live.on").await;
    let hostile = "<img src=x onerror=alert(1)> hi";
    let (status, sms) = send(
        app.req(&acct, Method::POST, "/sandbox/sms")
            .json(&json!({"from": "+447700900777", "to": number, "body": hostile})),
    )
    .await;
    assert_eq!(status, 201, "{sms}");
    browser.wait_text("main table", hostile).await;
    let images = browser
        .script(
            "return document.querySelectorAll('main img').length",
            json!([]),
        )
        .await;
    assert_eq!(images, 0, "a tenant's text is never markup");
    app.tick().await;
    let sid = sms["sid"].as_str().expect("sid");
    browser.open(&app.url(&format!("/#/sms/{sid}"))).await;
    browser.wait_text("main", "Webhook deliveries").await;
    browser.wait_text("main", "sms.mo").await;
    browser.screenshot("console-sms-detail").await;
    browser.quit().await;
}

/// The key WebDriver sends for Enter.
const ENTER: &str = "\u{E007}";

async fn the_operator_drives_the_console_by_keyboard_in_a_real_browser(app: TestApp) {
    if !available() {
        return;
    }
    let browser = Browser::start().await;
    browser.open(&app.url("/")).await;
    // The form is drawn once the page has asked whether a session exists.
    browser.find("#signin select[name=mode]").await;
    browser
        .script(
            "const m = document.querySelector('#signin select[name=mode]'); \
             m.value = 'admin'; m.dispatchEvent(new Event('change'));",
            json!([]),
        )
        .await;
    // Enter in the token's field signs in.
    browser
        .type_in("#secret", &format!("{ADMIN_TOKEN}{ENTER}"))
        .await;
    browser.wait_text("#who", "operator").await;
    browser
        .find("section[data-view=accounts][data-ready=true]")
        .await;
    // Create an account with an opening credit.
    browser
        .type_in("#view form.row input[name=name]", "Corner shop")
        .await;
    browser
        .type_in("#view form.row input[name=credit]", &format!("2500{ENTER}"))
        .await;
    let shown = browser.wait_text("#created .card", "apiKey").await;
    let (status, accounts) = send(app.admin(Method::GET, "/admin/accounts")).await;
    assert_eq!(status, 200);
    let made = accounts
        .as_array()
        .expect("accounts")
        .iter()
        .find(|a| a["name"] == "Corner shop")
        .expect("the account the page created")
        .clone();
    let sid = made["sid"].as_str().expect("sid").to_owned();
    assert_eq!(made["credit"], "2500.00");
    assert!(
        shown.contains(&sid),
        "the card shows the new account: {shown}"
    );
    browser.screenshot("console-operator").await;
    // Credit it by typing an amount in its row and pressing Enter; the focus stays there.
    let row = format!("#view tr[data-sid=\"{sid}\"]");
    browser
        .type_in(
            &format!("{row} form[data-act=credit] input"),
            &format!("1000{ENTER}"),
        )
        .await;
    browser.wait_text(&row, "3500.00").await;
    let focused = browser
        .script(
            "return document.activeElement.getAttribute('name')",
            json!([]),
        )
        .await;
    assert_eq!(focused, "amount", "the focus went back to the amount");
    // Suspend it: the button pressed from the keyboard.
    browser
        .press(&format!("{row} button[data-act=status]"), ENTER)
        .await;
    browser.wait_text(&row, "Reactivate").await;
    let (_, account) = send(app.admin(Method::GET, &format!("/admin/accounts/{sid}"))).await;
    assert_eq!(account["status"], "suspended", "{account}");
    assert_eq!(account["credit"], "3500.00", "{account}");
    // A bad amount is refused in the page and changes nothing.
    browser
        .type_in(
            &format!("{row} form[data-act=credit] input"),
            &format!("lots{ENTER}"),
        )
        .await;
    browser.wait_text("#toast", "amount").await;
    let (_, account) = send(app.admin(Method::GET, &format!("/admin/accounts/{sid}"))).await;
    assert_eq!(account["credit"], "3500.00");
    // The connectors and the node's metrics draw.
    browser.open(&app.url("/#/connectors")).await;
    browser
        .find("section[data-view=connectors][data-ready=true]")
        .await;
    browser.wait_text("#view", "SIP trunks").await;
    browser.open(&app.url("/#/metrics")).await;
    browser
        .find("section[data-view=metrics][data-ready=true]")
        .await;
    browser.wait_text("#view", "dialtone_").await;
    browser.quit().await;
}
