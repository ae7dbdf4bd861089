//! The console's lists that the v2.0 API pages by offset or lacks (SMS, calls, the ledger, a
//! scenario's runs), paged by keyset newest first: `?after=CURSOR&limit=N` answers
//! `{items, next}`, `next` the cursor of the following page (null at the end), so a page
//! costs the same at any depth. Scoped to the caller's account like every v2.0 read.

use axum::Json;
use axum::extract::{Path, State};
use dialtone_domain::call::{CallDirection, CallStatus};
use dialtone_store::search::{Keyset, Scanned};
use dialtone_store::sms::SmsFilter;
use dialtone_store::{billing, calls, runs, sms};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{AppError, AppResult};
use crate::http::auth::Caller;
use crate::http::extract::{Checks, JsonBody, QueryString};
use crate::state::AppState;

/// Rows a page holds unless asked (at most 200).
const PAGE: i64 = 50;

/// A page of a list.
#[derive(Debug, Serialize)]
pub(super) struct Page<T> {
    /// The rows, newest first.
    items: Vec<T>,
    /// The cursor of the next page; null at the end.
    next: Option<String>,
}

/// The cursor and size asked for: `after` is `ID` (or `TIME.ID` for lists by time).
fn keyset(checks: &mut Checks, after: Option<&str>, limit: Option<&str>) -> Keyset {
    let limit = match limit {
        None => PAGE,
        Some(l) => match l.parse::<i64>() {
            Ok(n) if (1..=200).contains(&n) => n,
            _ => {
                checks.fail("limit", "1 to 200");
                PAGE
            }
        },
    };
    let after = after.and_then(|a| {
        let parsed = match a.split_once('.') {
            Some((t, id)) => t.parse().ok().zip(id.parse().ok()),
            None => a.parse().ok().map(|id| (0, id)),
        };
        if parsed.is_none() {
            checks.fail("after", "a cursor from a page's next");
        }
        parsed
    });
    Keyset { after, limit }
}

pub(super) fn page<T, R>(
    rows: Vec<R>,
    limit: i64,
    cursor: impl Fn(&R) -> String,
    view: impl Fn(R) -> T,
) -> Page<T> {
    let next = (rows.len() as i64 == limit)
        .then(|| rows.last().map(&cursor))
        .flatten();
    Page {
        items: rows.into_iter().map(view).collect(),
        next,
    }
}

/// A page of a list whose filter may read only a window of rows: `next` is the last row's
/// cursor when the page filled, else where the window stopped (null when the rows ran out),
/// so a page of a rare match answers as fast as any and "More" goes on from there.
fn scanned_page<T, R>(
    scanned: Scanned<R>,
    limit: i64,
    position: impl Fn(&R) -> (i64, i64),
    by_time: bool,
    view: impl Fn(R) -> T,
) -> Page<T> {
    let cursor = |(time, id): (i64, i64)| {
        if by_time {
            format!("{time}.{id}")
        } else {
            id.to_string()
        }
    };
    let next = if scanned.rows.len() as i64 == limit {
        scanned.rows.last().map(|r| cursor(position(r)))
    } else {
        scanned.stopped_at.map(cursor)
    };
    Page {
        items: scanned.rows.into_iter().map(view).collect(),
        next,
    }
}

/// Filters of the SMS list (those of `GET /v2.0/sms`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct SmsQuery {
    direction: Option<String>,
    status: Option<String>,
    from: Option<String>,
    to: Option<String>,
    contains: Option<String>,
    after: Option<String>,
    limit: Option<String>,
}

/// `GET /console/api/sms`: the account's SMS newest first.
pub(super) async fn sms_list(
    State(state): State<AppState>,
    caller: Caller,
    QueryString(q): QueryString<SmsQuery>,
) -> AppResult<Json<Page<crate::v2::sms::SmsView>>> {
    let mut checks = Checks::default();
    let direction = q.direction.unwrap_or_else(|| "outbound".to_owned());
    if direction != "outbound" && direction != "inbound" {
        checks.fail("direction", "outbound or inbound");
    }
    if let Some(s) = &q.status
        && dialtone_domain::sms::SmsStatus::parse(s).is_none()
    {
        checks.fail("status", "an SMS status");
    }
    let keyset = keyset(&mut checks, q.after.as_deref(), q.limit.as_deref());
    checks.finish()?;
    let filter = SmsFilter {
        direction,
        created_after: None,
        created_before: None,
        from: q.from.filter(|s| !s.is_empty()),
        to: q.to.filter(|s| !s.is_empty()),
        contains: q.contains.filter(|s| !s.is_empty()),
        traffic_type: None,
        status: q.status,
    };
    let account = caller.account.id;
    let now = state.clock.now();
    let scanned = state
        .store
        .read(move |c| sms::newest(c, account, &filter, &keyset, now))
        .await?;
    Ok(Json(scanned_page(
        scanned,
        keyset.limit,
        |s| (s.created.millis(), s.id),
        true,
        |s| (&s).into(),
    )))
}

/// Filters of the calls list.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct CallQuery {
    direction: Option<String>,
    status: Option<String>,
    party: Option<String>,
    after: Option<String>,
    limit: Option<String>,
}

/// `GET /console/api/calls`: the account's calls newest first, as CDRs.
pub(super) async fn call_list(
    State(state): State<AppState>,
    caller: Caller,
    QueryString(q): QueryString<CallQuery>,
) -> AppResult<Json<Page<Value>>> {
    let mut checks = Checks::default();
    let direction = q
        .direction
        .as_deref()
        .filter(|d| !d.is_empty())
        .and_then(|d| {
            let parsed = CallDirection::parse(d);
            if parsed.is_none() {
                checks.fail("direction", "inbound or outbound");
            }
            parsed
        });
    let status = q.status.as_deref().filter(|s| !s.is_empty()).and_then(|s| {
        let parsed = CallStatus::parse(s);
        if parsed.is_none() {
            checks.fail("status", "a call status");
        }
        parsed
    });
    let keyset = keyset(&mut checks, q.after.as_deref(), q.limit.as_deref());
    checks.finish()?;
    let filter = calls::CallFilter {
        direction,
        status,
        party: q.party.filter(|p| !p.is_empty()),
    };
    let account = caller.account.id;
    let scanned = state
        .store
        .read(move |c| calls::newest(c, account, &filter, &keyset))
        .await?;
    Ok(Json(scanned_page(
        scanned,
        keyset.limit,
        |c| (0, c.id),
        false,
        |c| crate::voice::cdr::cdr(&c),
    )))
}

/// `GET /console/api/calls/{callid}`: a call's CDR, its timeline and what it left to hear.
pub(super) async fn call_detail(
    State(state): State<AppState>,
    caller: Caller,
    Path(callid): Path<String>,
) -> AppResult<Json<crate::sandbox::calls::SandboxCall>> {
    let account = caller.account.id;
    let call = state
        .store
        .read(move |c| calls::by_callid(c, account, &callid))
        .await?
        .ok_or_else(|| AppError::not_found("call"))?;
    Ok(Json(crate::sandbox::calls::render(&state, call.id).await?))
}

/// A page cursor alone.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct PageQuery {
    after: Option<String>,
    limit: Option<String>,
}

impl PageQuery {
    /// The page asked for (400 on a bad cursor or size).
    pub(super) fn keyset(&self) -> AppResult<Keyset> {
        let mut checks = Checks::default();
        let keyset = keyset(&mut checks, self.after.as_deref(), self.limit.as_deref());
        checks.finish()?;
        Ok(keyset)
    }
}

/// A movement of the balance.
#[derive(Debug, Serialize)]
pub(super) struct LedgerView {
    amount: String,
    balance: String,
    kind: String,
    cause: Option<String>,
    at: String,
}

/// `GET /console/api/ledger`: the account's balance movements newest first.
pub(super) async fn ledger(
    State(state): State<AppState>,
    caller: Caller,
    QueryString(q): QueryString<PageQuery>,
) -> AppResult<Json<Page<LedgerView>>> {
    let keyset = q.keyset()?;
    let account = caller.account.id;
    let rows = state
        .store
        .read(move |c| billing::ledger_newest(c, account, &keyset))
        .await?;
    Ok(Json(page(
        rows,
        keyset.limit,
        |e| e.id.to_string(),
        |e| LedgerView {
            amount: e.amount.to_string(),
            balance: e.balance_after.to_string(),
            kind: e.kind,
            cause: e.cause,
            at: e.created.to_rfc3339(),
        },
    )))
}

/// `GET /console/api/actions/{sid}/runs`: a scenario's runs newest first.
pub(super) async fn runs(
    State(state): State<AppState>,
    caller: Caller,
    Path(sid): Path<String>,
    QueryString(q): QueryString<PageQuery>,
) -> AppResult<Json<Page<crate::v2::actions::RunView>>> {
    let keyset = q.keyset()?;
    let account = caller.account.id;
    let rows = state
        .store
        .read(move |c| runs::newest_of_scenario(c, account, &sid, &keyset))
        .await?;
    Ok(Json(page(
        rows,
        keyset.limit,
        |r| r.id.to_string(),
        |r| crate::v2::actions::run_view(&r),
    )))
}

/// A script to check.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ScriptBody {
    script: String,
}

/// `POST /console/api/validate {script}`: the server's own validation, nothing stored:
/// `{valid: true}`, or 400 `invalid_scenario` with the line and column of the problem.
pub(super) async fn validate(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(b): JsonBody<ScriptBody>,
) -> AppResult<Json<Value>> {
    crate::scenarios::validate::validate(&state, caller.account.id, &b.script).await?;
    Ok(Json(serde_json::json!({ "valid": true })))
}

/// `GET /console/api/sms/{sid}`: an SMS as v2.0 shows it, with its status moves (oldest
/// first) and the network that carried it.
pub(super) async fn sms_detail(
    State(state): State<AppState>,
    caller: Caller,
    Path(sid): Path<String>,
) -> AppResult<Json<Value>> {
    let sid = dialtone_domain::Sid::parse(&sid).ok_or_else(|| AppError::not_found("SMS"))?;
    let account = caller.account.id;
    let now = state.clock.now();
    let s = state
        .store
        .read(move |c| sms::get(c, account, &sid, now))
        .await?
        .ok_or_else(|| AppError::not_found("SMS"))?;
    let history: Vec<Value> = s
        .history
        .iter()
        .map(|m| serde_json::json!({"from": m.old_status, "to": m.new_status, "at": m.at.to_rfc3339()}))
        .collect();
    let carrier = s.carrier.clone();
    Ok(Json(serde_json::json!({
        "sms": crate::v2::sms::SmsView::from(&s),
        "history": history,
        "network": carrier,
    })))
}
