//! The web console's session cookie: which session a request's `dialtone_console` cookie
//! names, and whether the request echoes that session's CSRF token (`x-csrf-token`).
//! A session authenticates the console's calls to the v2.0 API (as its account) and to
//! `/admin` (as the operator); the cookie is `HttpOnly` and `SameSite=Strict`, and every call
//! made with it must also carry the CSRF token, which only the console's own page can read.

use axum::http::HeaderMap;
use dialtone_store::console_sessions::{self, Session};
use sha2::{Digest, Sha256};

use crate::error::{AppError, AppResult};
use crate::state::AppState;

/// The cookie's name.
pub(crate) const COOKIE: &str = "dialtone_console";
/// The header the page echoes the CSRF token in.
pub(crate) const CSRF_HEADER: &str = "x-csrf-token";

/// A request's live session, with the digest of its token (to sign it out).
#[derive(Debug, Clone)]
pub(crate) struct SignedIn {
    /// The session.
    pub session: Session,
    /// SHA-256 of its token.
    pub token_hash: String,
}

/// SHA-256 of a token, hex: what the database keeps of it.
pub(crate) fn digest(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

/// The console cookie's value, if the request carries one.
fn token(headers: &HeaderMap) -> Option<&str> {
    headers
        .get_all(axum::http::header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == COOKIE)
        .map(|(_, value)| value)
        .filter(|v| !v.is_empty() && v.len() <= 128)
}

/// The live session the request's cookie names; None without a cookie. A cookie that names
/// no live session is 401 (signed out, or expired).
pub(crate) async fn find(state: &AppState, headers: &HeaderMap) -> AppResult<Option<SignedIn>> {
    let Some(token) = token(headers) else {
        return Ok(None);
    };
    let token_hash = digest(token);
    let now = state.clock.now();
    let hash = token_hash.clone();
    let session = state
        .store
        .lookup(move |c| console_sessions::find(c, &hash, now))
        .await?
        .ok_or_else(|| AppError::auth("the console session has ended: sign in again"))?;
    Ok(Some(SignedIn {
        session,
        token_hash,
    }))
}

/// 401 unless the request echoes the session's CSRF token.
pub(crate) fn check_csrf(headers: &HeaderMap, signed_in: &SignedIn) -> AppResult<()> {
    let presented = headers
        .get(CSRF_HEADER)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    if super::guard::same_secret(presented, &signed_in.session.csrf) {
        Ok(())
    } else {
        Err(AppError::auth(
            "a console session's request must carry its x-csrf-token",
        ))
    }
}
