//! Inbound SMS on demand, and the SMS that left the platform.

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use dialtone_domain::E164;
use dialtone_store::numbers::owned;
use dialtone_store::sms::{self as store, SmsFilter};
use serde::Deserialize;

use crate::error::{AppError, AppResult};
use crate::http::auth::Caller;
use crate::http::extract::{Checks, QueryString, json_body};
use crate::state::AppState;
use crate::v2::sms::SmsView;

#[derive(Debug, Deserialize)]
pub(super) struct InboundBody {
    from: String,
    to: String,
    body: String,
}

/// `POST /sandbox/sms {from, to, body}`: an SMS from the outside world to one of the
/// account's numbers. Answers 201 with the inbound SMS.
pub(super) async fn inbound(
    State(state): State<AppState>,
    caller: Caller,
    body: Bytes,
) -> AppResult<(StatusCode, Json<SmsView>)> {
    let b: InboundBody = json_body(&body)?;
    let mut checks = Checks::default();
    if E164::parse_format(&b.from).is_err() && dialtone_domain::sms::Sender::parse(&b.from).is_err()
    {
        checks.fail("from", "must be an E.164 number or an alphanumeric sender");
    }
    let to = checks.phone("to", Some(&b.to));
    if b.body.is_empty() {
        checks.fail("body", "must not be empty");
    }
    checks.finish()?;
    let to = to.map(|t| t.as_str().to_owned()).unwrap_or_default();
    let (account, now) = (caller.account.clone(), state.clock.now());
    let st = state.clone();
    let sms = state
        .store
        .write(move |c| {
            owned::get(c, account.id, &to)?
                .ok_or_else(|| AppError::not_found("number (the account owns no such number)"))?;
            crate::sms::receive(c, &st, &account, &b.from, &to, &b.body, now)
        })
        .await?;
    state.wake.notify_one();
    Ok((StatusCode::CREATED, Json((&sms).into())))
}

#[derive(Debug, Deserialize)]
pub(super) struct LeftQuery {
    to: Option<String>,
}

/// `GET /sandbox/sms[?to=]`: every SMS of the account handed to the simulated network,
/// oldest first (at most 1000).
pub(super) async fn left_the_platform(
    State(state): State<AppState>,
    caller: Caller,
    QueryString(q): QueryString<LeftQuery>,
) -> AppResult<Json<Vec<SmsView>>> {
    let mut checks = Checks::default();
    let to = checks.phone("to", q.to.as_deref());
    checks.finish()?;
    let filter = SmsFilter {
        direction: "outbound".to_owned(),
        to: to.map(|t| t.as_str().to_owned()),
        ..SmsFilter::default()
    };
    let account = caller.account.id;
    let now = state.clock.now();
    let list = state
        .store
        .read(move |c| store::list(c, account, &filter, 1000, now))
        .await?;
    Ok(Json(
        list.iter()
            .filter(|s| !matches!(s.status.as_str(), "created" | "error"))
            .map(Into::into)
            .collect(),
    ))
}
