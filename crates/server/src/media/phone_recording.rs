//! Recording an audio file by phone: `PUT /audio-files/{sid}/phone-id?country=CC` gives a
//! platform number and an 8-digit code valid 10 minutes; a call to that number that enters the
//! code and then records audio replaces the file's content ([`accept`], called by the calls
//! engine), which moves the file to `pending-conversion`.
//!
//! A code is worth an audio file, so guessing one must not pay: 10^8 codes, a code used only
//! by a call allowed to record for its file (a sandbox call records only for its own
//! account's files), and wrong codes counted per calling number ([`FAILURES_PER_CALLER`]) and
//! per recording number ([`FAILURES_PER_NUMBER`]) in a 10-minute window, past which the key is
//! locked out until the window ends.
//!
//! The number is a free number of the inventory (held by no account, in no reservation) of
//! the requested country, or of the closest country that has one ([`super::geo::closest`]):
//! the last one by E.164, which the number store hands out last.

use dialtone_domain::{E164, Sid, Timestamp};
use dialtone_store::DbError;
use dialtone_store::audio_files::{self, SOURCE_PHONE};
use rand::Rng;

use super::{emit_status, geo};
use crate::error::{AppError, ErrorCode};
use crate::state::AppState;

/// How long a code stays valid.
pub const CODE_TTL_MS: i64 = 10 * 60 * 1000;
/// Digits of a code.
pub const CODE_DIGITS: usize = 8;
/// Wrong codes a calling number may enter in a window before it is locked out.
pub const FAILURES_PER_CALLER: i64 = 5;
/// Wrong codes a recording number may take in a window (from every caller) before it is
/// locked out.
pub const FAILURES_PER_NUMBER: i64 = 50;
/// The window wrong codes are counted in, and the longest lockout.
pub const FAILURE_WINDOW_MS: i64 = 10 * 60 * 1000;

/// What to dial and what to enter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PhoneId {
    /// The platform number to call.
    pub number: E164,
    /// Six DTMF digits.
    pub code: String,
    /// When the code stops working.
    pub expires: Timestamp,
}

fn new_code() -> String {
    let n: u32 = rand::rng().random_range(0..100_000_000);
    format!("{n:08}")
}

/// What became of a code entered on the recording line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Accepted {
    /// The audio replaced this file's content.
    Recorded(Sid),
    /// No live code of this number that this call may use: counted as a failure.
    WrongCode,
    /// The calling number or the recording number failed too often: nothing was tried.
    LockedOut {
        /// When it may try again.
        until: Timestamp,
    },
}

/// Issues a recording code for a file of the account. `Ok(None)` when the account has no
/// such file; 400 `number_not_available` when the inventory has no free number at all.
pub async fn issue(
    state: &AppState,
    account_id: i64,
    sid: Sid,
    country: String,
) -> Result<Option<PhoneId>, AppError> {
    let now = state.clock.now();
    let expires = now.plus_ms(CODE_TTL_MS);
    let outcome = state
        .store
        .write(move |c| {
            let Some(file) = audio_files::get(c, account_id, &sid)? else {
                return Ok(Ok(None));
            };
            let countries = audio_files::countries_with_free_numbers(c)?;
            let Some(chosen) = geo::closest(&country, &countries) else {
                return Ok(Err(()));
            };
            let Some(number) = audio_files::recording_number(c, chosen)? else {
                return Ok(Err(()));
            };
            loop {
                let code = new_code();
                if audio_files::create_phone_id(c, file.id, &number, &code, expires, now)? {
                    return Ok(Ok(Some(PhoneId {
                        number,
                        code,
                        expires,
                    })));
                }
            }
        })
        .await
        .map_err(|e: DbError| AppError::from(e))?;
    outcome.map_err(|()| {
        AppError::new(
            ErrorCode::NumberNotAvailable,
            "no phone number is available for recording",
        )
    })
}

/// Called by the calls engine when a call from `calling_number` (made by `account` when it
/// is an account's own call) to `called_number` entered `code` and then sent `audio` (any
/// supported format; its type is sniffed, WAV assumed when unknown).
///
/// When `code` is a live code of that number that this call may use, the code is used up,
/// the audio replaces the file's content (source `phone`), the file moves to
/// `pending-conversion` (emitting `media.library.status_update`). A wrong code counts against
/// the calling and the recording number; either locked out, nothing is tried. 400
/// `file_too_large` when `audio` is over the size limit (nothing changes then).
pub async fn accept(
    state: &AppState,
    called_number: &E164,
    calling_number: &str,
    account: Option<i64>,
    code: &str,
    audio: Vec<u8>,
) -> Result<Accepted, AppError> {
    if audio.len() > state.config.audio_max_bytes {
        return Err(super::too_large(state));
    }
    let content_type = dialtone_media::sniff(&audio)
        .unwrap_or(dialtone_media::DeclaredType::Wav)
        .content_type();
    let (number, code, now) = (called_number.clone(), code.to_owned(), state.clock.now());
    let config = state.config.clone();
    let keys = vec![
        (format!("from:{calling_number}"), FAILURES_PER_CALLER),
        (
            format!("to:{}", called_number.as_str()),
            FAILURES_PER_NUMBER,
        ),
    ];
    let outcome = state
        .store
        .write(move |c| {
            if let Some(until) = audio_files::phone_code_lockout(c, &keys, FAILURE_WINDOW_MS, now)?
            {
                return Ok(Accepted::LockedOut { until });
            }
            let Some(file_id) = audio_files::use_phone_id(c, &number, &code, account, now)? else {
                let names: Vec<String> = keys.iter().map(|(k, _)| k.clone()).collect();
                audio_files::phone_code_failed(c, &names, FAILURE_WINDOW_MS, now)?;
                return Ok(Accepted::WrongCode);
            };
            let account = c
                .query_one(
                    "SELECT account_id FROM audio_files WHERE id = $1",
                    dialtone_store::params![file_id],
                )?
                .int(0)?;
            let replacing = crate::quotas::content_size(c, file_id)?;
            crate::quotas::check_audio_bytes(c, &config, account, audio.len(), replacing)?;
            let file =
                audio_files::set_content(c, file_id, SOURCE_PHONE, content_type, &audio, now)?;
            emit_status(c, &config.public_url(), &file, now)?;
            Ok::<_, AppError>(Accepted::Recorded(file.sid))
        })
        .await?;
    if matches!(outcome, Accepted::Recorded(_)) {
        state.wake.notify_one();
    }
    Ok(outcome)
}
