//! What one account may hold: subscriptions, scenarios, audio files and their bytes, runs
//! running at once. Each limit is a setting with a safe default; over it the request is
//! refused with 403 `quota_exceeded` (JSON-RPC 100) naming the limit, and nothing changes.
//! Each check runs in the transaction that would add the resource.

use dialtone_store::{Conn, Dialect, params};

use crate::config::Config;
use crate::error::{AppError, ErrorCode};

/// A resource an account holds a bounded number of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Quota {
    /// Webhook subscriptions.
    Webhooks,
    /// Actions scenarios.
    Scenarios,
    /// Audio files.
    AudioFiles,
    /// Runs in status `running`.
    RunningRuns,
}

impl Quota {
    fn limit(self, config: &Config) -> i64 {
        match self {
            Quota::Webhooks => config.quota_webhooks,
            Quota::Scenarios => config.quota_scenarios,
            Quota::AudioFiles => config.quota_audio_files,
            Quota::RunningRuns => config.quota_running_runs,
        }
    }

    fn what(self) -> &'static str {
        match self {
            Quota::Webhooks => "webhook subscriptions",
            Quota::Scenarios => "scenarios",
            Quota::AudioFiles => "audio files",
            Quota::RunningRuns => "runs running at once",
        }
    }

    fn count_sql(self, dialect: Dialect) -> &'static str {
        match (self, dialect) {
            (Quota::Webhooks, _) => "SELECT count(*) FROM webhooks WHERE account_id = $1",
            (Quota::Scenarios, _) => "SELECT count(*) FROM scenarios WHERE account_id = $1",
            (Quota::AudioFiles, _) => "SELECT count(*) FROM audio_files WHERE account_id = $1",
            // Through the partial index by an index scan (migration 0028).
            (Quota::RunningRuns, Dialect::Postgres) => "SELECT running_runs($1)",
            (Quota::RunningRuns, Dialect::Sqlite) => {
                "SELECT count(*) FROM runs WHERE account_id = $1 AND status = 'running'"
            }
        }
    }
}

/// 403 `quota_exceeded`.
fn exceeded(message: String) -> AppError {
    AppError::new(ErrorCode::QuotaExceeded, message)
}

/// Refuses one more `quota` resource for the account when it holds its limit.
pub(crate) fn check(
    c: &mut dyn Conn,
    config: &Config,
    quota: Quota,
    account_id: i64,
) -> Result<(), AppError> {
    check_limit(c, quota, account_id, quota.limit(config))
}

/// Refuses one more `quota` resource for the account when it holds `limit`.
pub(crate) fn check_limit(
    c: &mut dyn Conn,
    quota: Quota,
    account_id: i64,
    limit: i64,
) -> Result<(), AppError> {
    let held = held(c, quota, account_id)?;
    if held >= limit {
        return Err(over(quota, held, limit));
    }
    Ok(())
}

/// How many `quota` resources the account holds (for a check of several additions at
/// once, each against the count and the additions before it).
pub(crate) fn held(c: &mut dyn Conn, quota: Quota, account_id: i64) -> Result<i64, AppError> {
    Ok(
        c.query_one(quota.count_sql(c.dialect()), params![account_id])?
            .int(0)?,
    )
}

/// The refusal of one more `quota` resource to an account holding `held` of `limit`.
pub(crate) fn over(quota: Quota, held: i64, limit: i64) -> AppError {
    exceeded(format!(
        "the account holds {held} {}: the limit is {limit}",
        quota.what()
    ))
}

/// Refuses `adding` more bytes of audio when the account's stored audio (originals) would
/// exceed its limit; `replacing` is the size of the content this one replaces.
pub(crate) fn check_audio_bytes(
    c: &mut dyn Conn,
    config: &Config,
    account_id: i64,
    adding: usize,
    replacing: i64,
) -> Result<(), AppError> {
    let held = c
        .query_one(
            "SELECT COALESCE(sum(length(c.original)), 0) FROM audio_contents c \
             JOIN audio_files f ON f.id = c.audio_file_id WHERE f.account_id = $1",
            params![account_id],
        )?
        .int(0)?;
    let after = held
        .saturating_sub(replacing)
        .saturating_add(i64::try_from(adding).unwrap_or(i64::MAX));
    if after > config.quota_audio_bytes {
        return Err(exceeded(format!(
            "the account's audio would take {after} bytes: the limit is {} bytes",
            config.quota_audio_bytes
        )));
    }
    Ok(())
}

/// The size of a file's current content (0 without one).
pub(crate) fn content_size(c: &mut dyn Conn, file_id: i64) -> Result<i64, AppError> {
    Ok(c.query_opt(
        "SELECT length(original) FROM audio_contents WHERE audio_file_id = $1",
        params![file_id],
    )?
    .map(|r| r.int(0))
    .transpose()?
    .unwrap_or(0))
}
