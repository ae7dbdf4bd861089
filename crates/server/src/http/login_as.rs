//! "Login as" of the earlier interfaces: the official SDKs' option to act on another account
//! sends `<BRAND>-Login-As: account.hash <SID>` or `user.login <LOGIN>` (BRAND the one of
//! `--header-brand`). The caller acts as the target when the target is the caller itself or
//! one of its sub accounts; anything else is refused, never ignored (an SMS meant for a sub
//! account must not be sent and billed on the master), and so is another brand's header.

use axum::http::HeaderMap;
use dialtone_domain::Sid;
use dialtone_store::accounts::{self, Account};

use crate::error::{AppError, AppResult, ErrorCode};
use crate::state::AppState;

/// Whom a Login-As header names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Target {
    /// `account.hash SID`.
    Account(Sid),
    /// `user.login LOGIN`.
    User(String),
}

/// The header's name for a brand: `<BRAND>-Login-As`.
pub(crate) fn header_name(brand: &str) -> String {
    format!("{brand}-Login-As")
}

/// Parses the header's value.
pub(crate) fn parse(value: &str) -> Result<Target, String> {
    let expected = "expected `account.hash SID` or `user.login LOGIN`";
    let (kind, target) = value
        .trim()
        .split_once(char::is_whitespace)
        .ok_or_else(|| expected.to_owned())?;
    let target = target.trim();
    match kind.to_ascii_lowercase().as_str() {
        "account.hash" => Sid::parse(target)
            .map(Target::Account)
            .ok_or_else(|| format!("{target:?} is not an account hash")),
        "user.login" if (1..=64).contains(&target.len()) => Ok(Target::User(target.to_owned())),
        "user.login" => Err("a login is 1 to 64 characters".to_owned()),
        _ => Err(expected.to_owned()),
    }
}

/// The account `caller` acts as: itself without the header, else the target it may act as.
pub(crate) async fn resolve(
    headers: &HeaderMap,
    caller: Account,
    state: &AppState,
) -> AppResult<Account> {
    let name = header_name(&state.config.header_brand);
    let invalid = |why: String| AppError::new(ErrorCode::LoginAsInvalid, format!("{name}: {why}"));
    let Some(raw) = headers.get(name.as_str()) else {
        // Another brand's header is not ours to read, nor to ignore: acting on the caller's
        // own account instead of the one it names would spend the wrong credit.
        if let Some(other) = headers.keys().find(|h| h.as_str().ends_with("-login-as")) {
            return Err(AppError::new(
                ErrorCode::LoginAsInvalid,
                format!(
                    "{other}: this server reads {name} (its --header-brand is {})",
                    state.config.header_brand
                ),
            ));
        }
        return Ok(caller);
    };
    let value = raw
        .to_str()
        .map_err(|_| invalid("not visible ASCII".to_owned()))?;
    let target = parse(value).map_err(invalid)?;
    let found = state
        .store
        .lookup(move |c| match target {
            Target::Account(sid) => accounts::by_sid(c, &sid),
            Target::User(login) => Ok(accounts::by_login(c, &login)?.map(|(a, _)| a)),
        })
        .await?;
    match found {
        Some(a) if a.id == caller.id || a.parent_id == Some(caller.id) => Ok(a),
        // An account that does not exist and one the caller may not act as answer alike.
        _ => Err(AppError::new(
            ErrorCode::LoginAsRefused,
            format!("{name}: the caller may act only as itself or one of its sub accounts"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_kinds_parse_and_others_are_refused() {
        assert_eq!(
            parse("account.hash ABCD1234"),
            Ok(Target::Account(Sid::parse("abcd1234").expect("sid")))
        );
        assert_eq!(parse("user.login  acme "), Ok(Target::User("acme".into())));
        assert!(parse("account.hash").is_err());
        assert!(parse("account.hash not-a-sid").is_err());
        assert!(parse("session.token x").is_err());
        assert!(parse(&format!("user.login {}", "x".repeat(65))).is_err());
    }
}
