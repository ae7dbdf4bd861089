//! Who is calling. v2.0 accepts `x-api-key: KEY` or Basic `SID:KEY` (SID the key's account
//! or one of its sub accounts); the earlier interfaces accept Basic `login:password` or
//! `Authorization: Api-Key KEY`; the web console's session cookie with its CSRF token
//! ([`super::console_session`]) stands for an account's key. Anything else is 401
//! `auth_error`.

use axum::extract::FromRequestParts;
use axum::http::HeaderMap;
use axum::http::request::Parts;
use base64::Engine;
use dialtone_domain::Sid;
use dialtone_domain::account::AccountStatus;
use dialtone_domain::credentials::hash_api_key;
use dialtone_store::accounts::{self, Account};

use crate::error::{AppError, AppResult, ErrorCode};
use crate::state::AppState;

/// The account a v2.0 request acts on.
#[derive(Debug, Clone)]
pub(crate) struct Caller {
    /// The acting account (a sub account when addressed by Basic `SUBSID:MASTERKEY`). Its
    /// settings are current; its `credit` may predate the last debits (authentication
    /// keeps accounts in memory between changes of their settings): read the balance
    /// with `billing::balance`.
    pub account: Account,
}

impl Caller {
    /// 403 `account_suspended` unless the account may spend.
    pub(crate) fn ensure_may_spend(&self) -> AppResult<()> {
        may_spend(&self.account)
    }
}

/// 403 `account_suspended` unless `account` may spend.
pub(crate) fn may_spend(account: &Account) -> AppResult<()> {
    if account.status == AccountStatus::Suspended {
        return Err(AppError::new(
            ErrorCode::AccountSuspended,
            "the account is suspended: reads work, spending is refused",
        ));
    }
    Ok(())
}

/// A credential as presented, before it is checked.
enum Presented {
    ApiKey(String),
    Basic { user: String, secret: String },
}

fn basic(value: &str) -> Option<(String, String)> {
    let encoded = value
        .strip_prefix("Basic ")
        .or_else(|| value.strip_prefix("basic "))?;
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .ok()?;
    let text = String::from_utf8(decoded).ok()?;
    let (user, secret) = text.split_once(':')?;
    Some((user.to_owned(), secret.to_owned()))
}

fn header<'a>(headers: &'a HeaderMap, name: &str) -> AppResult<Option<&'a str>> {
    headers
        .get(name)
        .map(|v| {
            v.to_str()
                .map_err(|_| AppError::auth(format!("malformed {name} header")))
        })
        .transpose()
}

/// The account of a live key, through the cache of accounts by key (its `credit` may be
/// older than the last debit).
pub(crate) async fn account_by_key(state: &AppState, key: &str) -> AppResult<Option<Account>> {
    let hash = hash_api_key(key);
    Ok(state.keys.account_for_request(&state.store, hash).await?)
}

impl FromRequestParts<AppState> for Caller {
    type Rejection = AppError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> AppResult<Self> {
        // Already authenticated (and counted) by a middleware of this request.
        if let Some(caller) = parts.extensions.get::<Caller>() {
            return Ok(caller.clone());
        }
        let client = client_of(parts);
        let now = state.clock.now();
        state.auth_guard.check_client(client, now)?;
        let caller = match authenticate(&parts.headers, state).await {
            Ok(caller) => caller,
            Err(e) => {
                if e.code == ErrorCode::AuthError {
                    state.auth_guard.failed(client, now);
                }
                return Err(e);
            }
        };
        state
            .limiter
            .admit(&state.config, &caller.account, state.clock.now())?;
        parts.extensions.insert(caller.clone());
        Ok(caller)
    }
}

/// The account of a request whose one effect is a write that checks authentication in its
/// own transaction (`POST /v2.0/sms`, see `sms::intake`). An `x-api-key` whose active
/// account this node has cached is taken without a read of its own (`assumed` is then the
/// version it was cached at: `KeyCache::assumed`); anything else is authenticated as
/// [`Caller`] is. When the write finds the version moved it makes nothing, and the handler
/// authenticates the request again ([`SendCaller::confirm`]): a key revoked or an account
/// suspended before the request began is refused as surely as with a read of its own. What
/// such a request may answer before its write (a 400 for a malformed body, a 429) depends on
/// nothing the change could have made.
#[derive(Debug, Clone)]
pub(crate) struct SendCaller {
    /// The acting account, as [`Caller::account`].
    pub account: Account,
    /// The authentication version the account was cached at, when it was taken without a
    /// read; `None` when the request read it.
    pub assumed: Option<i64>,
    /// The client's address, whose failures count towards its lockout.
    client: Option<std::net::IpAddr>,
}

impl SendCaller {
    /// Authenticates the request again, reading what authentication reads (a write found
    /// the version the account was assumed at moved): its account now, or 401, which
    /// counts as a failure of the client's address.
    pub(crate) async fn confirm(&self, state: &AppState, headers: &HeaderMap) -> AppResult<Caller> {
        let result = authenticate(headers, state).await;
        if let Err(e) = &result
            && e.code == ErrorCode::AuthError
        {
            state.auth_guard.failed(self.client, state.clock.now());
        }
        result
    }
}

impl FromRequestParts<AppState> for SendCaller {
    type Rejection = AppError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> AppResult<Self> {
        if parts.extensions.get::<Caller>().is_none()
            && let Some(key) = header(&parts.headers, "x-api-key")?
            && let Some((account, version)) = state.keys.assumed(&hash_api_key(key))
            && account.status == AccountStatus::Active
        {
            let (now, client) = (state.clock.now(), client_of(parts));
            state.auth_guard.check_client(client, now)?;
            state.limiter.admit(&state.config, &account, now)?;
            return Ok(Self {
                account,
                assumed: Some(version),
                client,
            });
        }
        let caller = Caller::from_request_parts(parts, state).await?;
        Ok(Self {
            account: caller.account,
            assumed: None,
            client: client_of(parts),
        })
    }
}

/// The address of the request's client, when the listener recorded it.
fn client_of(parts: &Parts) -> Option<std::net::IpAddr> {
    parts
        .extensions
        .get::<super::client::ClientAddr>()
        .map(|c| c.0)
}

/// Resolves the credentials of a v2.0 request to the account it acts on.
async fn authenticate(headers: &HeaderMap, state: &AppState) -> AppResult<Caller> {
    {
        let presented = if let Some(key) = header(headers, "x-api-key")? {
            Presented::ApiKey(key.to_owned())
        } else if let Some(auth) = header(headers, "authorization")? {
            let (user, secret) = basic(auth).ok_or_else(|| {
                AppError::auth(
                    "malformed Authorization header: use x-api-key, or Basic with SID:API_KEY",
                )
            })?;
            Presented::Basic { user, secret }
        } else if let Some(signed_in) = super::console_session::find(state, headers).await? {
            return console_caller(state, headers, &signed_in).await;
        } else {
            return Err(AppError::auth(
                "missing credentials: send x-api-key, or Basic authentication with SID:API_KEY",
            ));
        };
        match presented {
            Presented::ApiKey(key) => {
                let account = account_by_key(state, &key)
                    .await?
                    .ok_or_else(|| AppError::auth("invalid API key"))?;
                Ok(Caller { account })
            }
            Presented::Basic { user, secret } => {
                let invalid = || AppError::auth("invalid account SID or API key");
                let key_account = account_by_key(state, &secret).await?.ok_or_else(invalid)?;
                if user == key_account.sid.as_str() {
                    return Ok(Caller {
                        account: key_account,
                    });
                }
                let sid = Sid::parse(&user).ok_or_else(invalid)?;
                let acting = state
                    .store
                    .lookup(move |c| accounts::by_sid(c, &sid))
                    .await?
                    .ok_or_else(invalid)?;
                if acting.parent_id == Some(key_account.id) {
                    Ok(Caller { account: acting })
                } else {
                    Err(invalid())
                }
            }
        }
    }
}

/// The account of a console session (an account's, with its CSRF token echoed).
async fn console_caller(
    state: &AppState,
    headers: &HeaderMap,
    signed_in: &super::console_session::SignedIn,
) -> AppResult<Caller> {
    super::console_session::check_csrf(headers, signed_in)?;
    let id = signed_in
        .session
        .account_id
        .ok_or_else(|| AppError::auth("the operator's console session has no account"))?;
    let account = state
        .store
        .lookup(move |c| accounts::by_id(c, id))
        .await?
        .ok_or_else(|| AppError::auth("the console session's account is gone"))?;
    Ok(Caller { account })
}

/// The account a request of the earlier interfaces (JSON-RPC, SMS REST v1.1) acts on.
#[derive(Debug, Clone)]
pub(crate) struct LegacyCaller {
    /// The authenticated account (its `credit` may predate the last debits, as
    /// [`Caller`]'s).
    pub account: Account,
}

/// Authenticates Basic `login:password` or `Authorization: Api-Key KEY` from `client` (a
/// client that failed too often this minute is refused first (429), and every failure
/// counts), then acts as the account a Login-As header names ([`super::login_as`]).
pub(crate) async fn legacy_caller(
    headers: &HeaderMap,
    client: Option<std::net::IpAddr>,
    state: &AppState,
) -> AppResult<LegacyCaller> {
    let now = state.clock.now();
    state.auth_guard.check_client(client, now)?;
    let result = legacy_authenticate(headers, state).await;
    if let Err(e) = &result
        && e.code == ErrorCode::AuthError
    {
        state.auth_guard.failed(client, now);
    }
    let account = super::login_as::resolve(headers, result?, state).await?;
    state
        .limiter
        .admit(&state.config, &account, state.clock.now())?;
    Ok(LegacyCaller { account })
}

/// The account whose credentials the request carries.
async fn legacy_authenticate(headers: &HeaderMap, state: &AppState) -> AppResult<Account> {
    let auth = header(headers, "authorization")?.ok_or_else(|| {
        AppError::auth("missing credentials: use Basic login:password or Api-Key")
    })?;
    if let Some(key) = auth.strip_prefix("Api-Key ") {
        return account_by_key(state, key.trim())
            .await?
            .ok_or_else(|| AppError::auth("invalid API key"));
    }
    let (login, password) =
        basic(auth).ok_or_else(|| AppError::auth("malformed Authorization header"))?;
    account_by_password(state, login, password).await
}

/// The account a login and password name (the earlier interfaces, the console's sign-in).
/// An unknown login is checked against a decoy at the same cost as a wrong password.
pub(crate) async fn account_by_password(
    state: &AppState,
    login: String,
    password: String,
) -> AppResult<Account> {
    let found = state
        .store
        .lookup(move |c| accounts::by_login(c, &login))
        .await?;
    let (account, stored) = match found {
        Some((account, stored)) => (Some(account), Some(stored)),
        None => (None, None),
    };
    let ok = state.auth_guard.verify(password, stored).await?;
    match account {
        Some(account) if ok => Ok(account),
        _ => Err(AppError::auth("invalid login or password")),
    }
}
