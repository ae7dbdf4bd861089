//! Signing in to the console: an account with its login and password or an API key, the
//! operator with the admin token, or a one-time link (printed at the first start). Each
//! opens a session: an `HttpOnly`, `SameSite=Strict` cookie holding a random token (the
//! database keeps its digest) and a CSRF token the page reads from `GET /console/session`
//! and echoes in `x-csrf-token`. Failed sign-ins count against the client's address like
//! any failed authentication.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use dialtone_domain::credentials::random_base62;
use dialtone_store::accounts::{self, Account};
use dialtone_store::console_sessions::{self, NewSession, SessionKind};
use serde::{Deserialize, Serialize};

use crate::error::{AppError, AppResult, ErrorCode};
use crate::http::client::{Client, OverTls};
use crate::http::console_session::{self, COOKIE};
use crate::http::extract::JsonBody;
use crate::state::AppState;

/// How long a session lasts (12 hours).
const SESSION_MS: i64 = 12 * 3_600_000;
/// How long a one-time link stays usable (24 hours).
const LINK_MS: i64 = 24 * 3_600_000;
/// Live sessions kept per account (and for the operator); older ones end.
const KEEP: i64 = 16;

/// One way to sign in.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(super) struct SignIn {
    login: Option<String>,
    password: Option<String>,
    api_key: Option<String>,
    admin_token: Option<String>,
}

/// The signed-in session as the page sees it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct SessionView {
    /// `account` or `admin`.
    kind: &'static str,
    /// The token to echo in `x-csrf-token`.
    csrf: String,
    /// The account (None for the operator).
    account: Option<AccountBrief>,
    /// Whether the simulated network (and `/sandbox`) runs.
    sandbox: bool,
    /// Whether the operator's console is on (an admin token is configured).
    operator: bool,
}

/// An account's name and ids.
#[derive(Debug, Serialize)]
struct AccountBrief {
    sid: String,
    name: String,
    login: String,
    currency: String,
}

fn view(
    state: &AppState,
    kind: SessionKind,
    csrf: String,
    account: Option<&Account>,
) -> SessionView {
    SessionView {
        kind: match kind {
            SessionKind::Admin => "admin",
            SessionKind::Account | SessionKind::Link => "account",
        },
        csrf,
        account: account.map(|a| AccountBrief {
            sid: a.sid.to_string(),
            name: a.name.clone(),
            login: a.login.clone(),
            currency: a.currency.clone(),
        }),
        sandbox: state.networks.simulated().is_some(),
        operator: state.config.admin_token.is_some(),
    }
}

/// The cookie that holds `token` (none: the one that clears it).
fn cookie(token: Option<&str>, secure: bool) -> HeaderValue {
    let secure = if secure { "; Secure" } else { "" };
    let text = match token {
        Some(t) => format!(
            "{COOKIE}={t}; Path=/; HttpOnly; SameSite=Strict; Max-Age={}{secure}",
            SESSION_MS / 1000
        ),
        None => format!("{COOKIE}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0{secure}"),
    };
    HeaderValue::from_str(&text).unwrap_or_else(|_| HeaderValue::from_static(""))
}

/// Opens a session of `kind` lasting `lasts_ms` and returns its cookie's token and its
/// CSRF token (a one-time link is a session of kind `Link`).
async fn open(
    state: &AppState,
    kind: SessionKind,
    account_id: Option<i64>,
    lasts_ms: i64,
) -> AppResult<(String, String)> {
    let token = random_base62(40);
    let csrf = random_base62(32);
    let now = state.clock.now();
    let (hash, csrf_kept) = (console_session::digest(&token), csrf.clone());
    state
        .store
        .write(move |c| {
            console_sessions::open(
                c,
                &NewSession {
                    token_hash: &hash,
                    kind,
                    account_id,
                    csrf: &csrf_kept,
                    expires: now.plus_ms(lasts_ms),
                },
                KEEP,
                now,
            )
        })
        .await?;
    Ok((token, csrf))
}

/// Who the sign-in names: an account, or the operator (None).
async fn who(state: &AppState, b: SignIn) -> AppResult<Option<Account>> {
    match (b.login, b.password, b.api_key, b.admin_token) {
        (Some(login), Some(password), None, None) => {
            crate::http::auth::account_by_password(state, login, password)
                .await
                .map(Some)
        }
        (None, None, Some(key), None) => crate::http::auth::account_by_key(state, &key)
            .await?
            .map(Some)
            .ok_or_else(|| AppError::auth("invalid API key")),
        (None, None, None, Some(token)) => {
            let expected = state.config.admin_token.as_deref().ok_or_else(|| {
                AppError::auth("the operator's console is off: no admin token is configured")
            })?;
            if crate::http::guard::same_secret(&token, expected) {
                Ok(None)
            } else {
                Err(AppError::auth("wrong admin token"))
            }
        }
        _ => Err(AppError::invalid(
            "body",
            "give login and password, or apiKey, or adminToken",
        )),
    }
}

/// `POST /console/session`: signs in; answers the session and sets its cookie.
pub(super) async fn sign_in(
    State(state): State<AppState>,
    Client(client): Client,
    tls: Option<axum::Extension<OverTls>>,
    JsonBody(b): JsonBody<SignIn>,
) -> AppResult<Response> {
    let now = state.clock.now();
    state.auth_guard.check_client(client, now)?;
    let account = match who(&state, b).await {
        Ok(account) => account,
        Err(e) => {
            if e.code == ErrorCode::AuthError {
                state.auth_guard.failed(client, now);
            }
            return Err(e);
        }
    };
    let kind = if account.is_some() {
        SessionKind::Account
    } else {
        SessionKind::Admin
    };
    let (token, csrf) = open(&state, kind, account.as_ref().map(|a| a.id), SESSION_MS).await?;
    let body = Json(view(&state, kind, csrf, account.as_ref()));
    Ok((
        [(header::SET_COOKIE, cookie(Some(&token), tls.is_some()))],
        body,
    )
        .into_response())
}

/// `GET /console/session`: the session of the request's cookie (401 without one).
pub(super) async fn current(
    State(state): State<AppState>,
    headers: HeaderMap,
) -> AppResult<Json<SessionView>> {
    let signed_in = console_session::find(&state, &headers)
        .await?
        .ok_or_else(|| AppError::auth("not signed in"))?;
    let account = match signed_in.session.account_id {
        Some(id) => Some(
            state
                .store
                .lookup(move |c| accounts::by_id(c, id))
                .await?
                .ok_or_else(|| AppError::auth("the console session's account is gone"))?,
        ),
        None => None,
    };
    Ok(Json(view(
        &state,
        signed_in.session.kind,
        signed_in.session.csrf,
        account.as_ref(),
    )))
}

/// `DELETE /console/session`: signs out (with the CSRF token) and clears the cookie.
pub(super) async fn sign_out(
    State(state): State<AppState>,
    tls: Option<axum::Extension<OverTls>>,
    headers: HeaderMap,
) -> AppResult<Response> {
    if let Some(signed_in) = console_session::find(&state, &headers).await? {
        console_session::check_csrf(&headers, &signed_in)?;
        let hash = signed_in.token_hash;
        state
            .store
            .write(move |c| console_sessions::close(c, &hash))
            .await?;
    }
    Ok((
        StatusCode::NO_CONTENT,
        [(header::SET_COOKIE, cookie(None, tls.is_some()))],
    )
        .into_response())
}

/// `GET /console/open/{token}`: a one-time link. Opens the account's session and sends the
/// browser to the console; a used or expired link sends it to the sign-in page.
pub(super) async fn open_link(
    State(state): State<AppState>,
    tls: Option<axum::Extension<OverTls>>,
    Path(token): Path<String>,
) -> AppResult<Response> {
    let now = state.clock.now();
    let hash = console_session::digest(&token);
    let account = state
        .store
        .write(move |c| console_sessions::take_link(c, &hash, now))
        .await?;
    let Some(account_id) = account else {
        return Ok((
            StatusCode::SEE_OTHER,
            [(header::LOCATION, "/#/signin?link=used")],
        )
            .into_response());
    };
    let (token, _) = open(&state, SessionKind::Account, Some(account_id), SESSION_MS).await?;
    Ok((
        StatusCode::SEE_OTHER,
        [
            (header::LOCATION, HeaderValue::from_static("/")),
            (header::SET_COOKIE, cookie(Some(&token), tls.is_some())),
        ],
    )
        .into_response())
}

/// Makes a one-time link to the console signed in as `account_id` (the first start prints
/// one for the dev account): its path, `/console/open/TOKEN`.
pub(crate) async fn one_time_link(state: &AppState, account_id: i64) -> anyhow::Result<String> {
    let (token, _) = open(state, SessionKind::Link, Some(account_id), LINK_MS)
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    Ok(format!("/console/open/{token}"))
}
