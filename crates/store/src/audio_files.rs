//! Audio files (the media library): metadata, the uploaded and converted content (both in the
//! database, so every node of a PostgreSQL deployment serves them), the conversion jobs
//! claimed with a lease, and the codes of recording by phone.
//!
//! Status moves: `pending-content` (created without content) -> `pending-conversion` (content
//! stored, a conversion job queued) -> `processing` (a worker claimed the job) -> `ready` or
//! `error`. New content can arrive in any status; it bumps the file's `revision`, so the
//! outcome of a conversion of older content is discarded.

use dialtone_domain::{E164, Sid, Timestamp};

use crate::params;
use crate::search::{self, Paging};
use crate::sql::{Conn, DbError, Dialect, SqlBuilder};

/// Created without content.
pub const PENDING_CONTENT: &str = "pending-content";
/// Content stored, conversion queued.
pub const PENDING_CONVERSION: &str = "pending-conversion";
/// A worker is converting it.
pub const PROCESSING: &str = "processing";
/// Converted: playable.
pub const READY: &str = "ready";
/// Conversion failed (see `error`).
pub const ERROR: &str = "error";
/// Every status, in lifecycle order.
pub const STATUSES: [&str; 5] = [
    PENDING_CONTENT,
    PENDING_CONVERSION,
    PROCESSING,
    READY,
    ERROR,
];

/// Content uploaded through the API.
pub const SOURCE_UPLOAD: &str = "upload";
/// Content recorded by phone.
pub const SOURCE_PHONE: &str = "phone";
/// Content spoken from a text.
pub const SOURCE_TTS: &str = "tts";
/// Every source.
pub const SOURCES: [&str; 3] = [SOURCE_UPLOAD, SOURCE_PHONE, SOURCE_TTS];
/// The content type of a text to speak (its "original" is the text): the conversion
/// worker speaks it instead of decoding it.
pub const TTS_CONTENT_TYPE: &str = "text/x-dialtone-tts";

/// An audio file (without its content).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AudioFile {
    /// Internal key.
    pub id: i64,
    /// Public identifier.
    pub sid: Sid,
    /// Owner.
    pub account_id: i64,
    /// Name (1 to 64 characters).
    pub name: String,
    /// One of [`STATUSES`].
    pub status: String,
    /// One of [`SOURCES`], once content arrived.
    pub source: Option<String>,
    /// Content type of the upload.
    pub content_type: Option<String>,
    /// Size of the upload, in bytes.
    pub size: Option<i64>,
    /// Duration of the converted audio, in milliseconds (when ready).
    pub duration_ms: Option<i64>,
    /// Why the conversion failed (when `error`).
    pub error: Option<String>,
    /// The voice of a text-to-speech file.
    pub voice: Option<String>,
    /// The text of a text-to-speech file.
    pub text: Option<String>,
    /// Bumped by every new content.
    pub revision: i64,
    /// Creation time.
    pub created: Timestamp,
    /// Last change.
    pub updated: Timestamp,
}

crate::row_decoder! {
    const COLUMNS; fn from_row -> AudioFile {
        id: int("id"),
        sid: sid("sid"),
        account_id: int("account_id"),
        name: text("name"),
        status: text("status"),
        source: opt_text("source"),
        content_type: opt_text("content_type"),
        size: opt_int("size"),
        duration_ms: opt_int("duration_ms"),
        error: opt_text("error"),
        voice: opt_text("voice"),
        text: opt_text("text"),
        revision: int("revision"),
        created: timestamp("created"),
        updated: timestamp("updated"),
    }
}

/// Creates an audio file without content (`pending-content`).
pub fn create(
    conn: &mut dyn Conn,
    account_id: i64,
    name: &str,
    now: Timestamp,
) -> Result<AudioFile, DbError> {
    loop {
        let sid = Sid::generate();
        let row = conn.query_opt(
            &format!(
                "INSERT INTO audio_files (sid, account_id, name, status, created, updated) VALUES ($1, $2, $3, $4, $5, $5) \
                 ON CONFLICT (sid) DO NOTHING RETURNING {COLUMNS}"
            ),
            params![&sid, account_id, name, PENDING_CONTENT, now],
        )?;
        if let Some(r) = row {
            return from_row(&r);
        }
    }
}

/// An audio file of the account.
pub fn get(conn: &mut dyn Conn, account_id: i64, sid: &Sid) -> Result<Option<AudioFile>, DbError> {
    conn.query_opt(
        &format!("SELECT {COLUMNS} FROM audio_files WHERE account_id = $1 AND sid = $2"),
        params![account_id, sid],
    )?
    .map(|r| from_row(&r))
    .transpose()
}

/// An audio file by internal key, whatever its account.
pub fn by_id(conn: &mut dyn Conn, id: i64) -> Result<Option<AudioFile>, DbError> {
    conn.query_opt(
        &format!("SELECT {COLUMNS} FROM audio_files WHERE id = $1"),
        params![id],
    )?
    .map(|r| from_row(&r))
    .transpose()
}

/// Every audio file of the account, newest first (JSON-RPC `get_list`), at most `limit`.
pub fn list(conn: &mut dyn Conn, account_id: i64, limit: i64) -> Result<Vec<AudioFile>, DbError> {
    conn.query(
        &format!(
            "SELECT {COLUMNS} FROM audio_files WHERE account_id = $1 ORDER BY created DESC, id DESC LIMIT $2"
        ),
        params![account_id, limit],
    )?
    .iter()
    .map(from_row)
    .collect()
}

/// Renames an audio file; None when the account has no such file.
pub fn rename(
    conn: &mut dyn Conn,
    account_id: i64,
    sid: &Sid,
    name: &str,
    now: Timestamp,
) -> Result<Option<AudioFile>, DbError> {
    conn.query_opt(
        &format!("UPDATE audio_files SET name = $1, updated = $2 WHERE account_id = $3 AND sid = $4 RETURNING {COLUMNS}"),
        params![name, now, account_id, sid],
    )?
    .map(|r| from_row(&r))
    .transpose()
}

/// Deletes an audio file with its content, pending conversion and phone codes; false when
/// the account has no such file.
pub fn delete(conn: &mut dyn Conn, account_id: i64, sid: &Sid) -> Result<bool, DbError> {
    let Some(file) = get(conn, account_id, sid)? else {
        return Ok(false);
    };
    for table in ["audio_contents", "audio_conversions", "audio_phone_ids"] {
        conn.execute(
            &format!("DELETE FROM {table} WHERE audio_file_id = $1"),
            params![file.id],
        )?;
    }
    conn.execute("DELETE FROM audio_files WHERE id = $1", params![file.id])?;
    Ok(true)
}

/// Search filters.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    /// Part of the name.
    pub name: Option<String>,
    /// Exact status.
    pub status: Option<String>,
    /// Exact source.
    pub source: Option<String>,
}

/// A page of the account's audio files.
pub fn search(
    conn: &mut dyn Conn,
    account_id: i64,
    filter: &Filter,
    paging: &Paging,
) -> Result<(i64, Vec<AudioFile>), DbError> {
    let mut q = SqlBuilder::new("FROM audio_files WHERE account_id = ");
    q.bind(account_id);
    if let Some(name) = &filter.name {
        search::push_contains(&mut q, conn.dialect(), "name", name);
    }
    if let Some(status) = &filter.status {
        q.push(" AND status = ").bind(status.clone());
    }
    if let Some(source) = &filter.source {
        q.push(" AND source = ").bind(source.clone());
    }
    let (total, rows) = search::page(conn, COLUMNS, &q, "id", paging)?;
    Ok((total, rows.iter().map(from_row).collect::<Result<_, _>>()?))
}

/// Stores new content for the file and queues its conversion: status `pending-conversion`,
/// duration and error cleared, revision bumped, the conversion job (re)set to run at `now`.
pub fn set_content(
    conn: &mut dyn Conn,
    file_id: i64,
    source: &str,
    content_type: &str,
    original: &[u8],
    now: Timestamp,
) -> Result<AudioFile, DbError> {
    let size = i64::try_from(original.len()).unwrap_or(i64::MAX);
    let row = conn.query_one(
        &format!(
            "UPDATE audio_files SET status = $1, source = $2, content_type = $3, size = $4, duration_ms = NULL, \
             error = NULL, voice = NULL, text = NULL, revision = revision + 1, updated = $5 WHERE id = $6 RETURNING {COLUMNS}"
        ),
        params![PENDING_CONVERSION, source, content_type, size, now, file_id],
    )?;
    let file = from_row(&row)?;
    conn.execute(
        "INSERT INTO audio_contents (audio_file_id, original, converted) VALUES ($1, $2, NULL) \
         ON CONFLICT (audio_file_id) DO UPDATE SET original = excluded.original, converted = NULL",
        params![file_id, original],
    )?;
    conn.execute(
        "INSERT INTO audio_conversions (audio_file_id, revision, attempts, next_at, created) VALUES ($1, $2, 0, $3, $3) \
         ON CONFLICT (audio_file_id) DO UPDATE SET revision = excluded.revision, attempts = 0, next_at = excluded.next_at",
        params![file_id, file.revision, now],
    )?;
    Ok(file)
}

/// Stores a text to speak as the file's content (source `tts`, its text and voice kept) and
/// queues its synthesis like a conversion.
pub fn set_tts(
    conn: &mut dyn Conn,
    file_id: i64,
    text: &str,
    voice: &str,
    now: Timestamp,
) -> Result<AudioFile, DbError> {
    set_content(
        conn,
        file_id,
        SOURCE_TTS,
        TTS_CONTENT_TYPE,
        text.as_bytes(),
        now,
    )?;
    let row = conn.query_one(
        &format!("UPDATE audio_files SET voice = $1, text = $2 WHERE id = $3 RETURNING {COLUMNS}"),
        params![voice, text, file_id],
    )?;
    from_row(&row)
}

/// A conversion job claimed by a worker, with the content to convert.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claimed {
    /// The job.
    pub job_id: i64,
    /// The file.
    pub audio_file_id: i64,
    /// The file's revision the content belongs to.
    pub revision: i64,
    /// Claims of this job so far, this one included.
    pub attempts: i64,
    /// Declared content type.
    pub content_type: String,
    /// The uploaded bytes (the text, for a text to speak).
    pub original: Vec<u8>,
    /// The file's account.
    pub account_id: i64,
    /// The voice of a text to speak.
    pub voice: Option<String>,
}

/// Whether a conversion job is due at `now` (a cheap read before claiming in a write).
pub fn any_due(conn: &mut dyn Conn, now: Timestamp) -> Result<bool, DbError> {
    Ok(conn
        .query_opt(
            "SELECT 1 FROM audio_conversions WHERE next_at <= $1 LIMIT 1",
            params![now],
        )?
        .is_some())
}

/// Claims due conversion jobs, leasing each for `lease_ms`: a worker that dies
/// mid-conversion leaves the job to be claimed again when the lease runs out. Of the due
/// jobs (oldest first) of accounts not in `exclude_accounts`, those `pick` takes (it is
/// given the file's account), at most `limit`.
pub fn claim_conversions(
    conn: &mut dyn Conn,
    now: Timestamp,
    lease_ms: i64,
    limit: i64,
    exclude_accounts: &[i64],
    pick: &mut dyn FnMut(i64) -> bool,
) -> Result<Vec<Claimed>, DbError> {
    let lock = match conn.dialect() {
        Dialect::Postgres => " FOR UPDATE OF j SKIP LOCKED",
        Dialect::Sqlite => "",
    };
    let mut params = vec![crate::sql::Value::from(now)];
    let accounts = exclude_accounts.iter().map(|a| (*a).into()).collect();
    let filter = crate::sql::not_in("f.account_id", accounts, &mut params);
    let scan = limit.max(1) * 8;
    // Candidates first, without their content; the content of those taken only.
    let mut taken = Vec::new();
    for r in conn.query(
        &format!(
            "SELECT j.id, f.account_id FROM audio_conversions j JOIN audio_files f ON f.id = j.audio_file_id \
             WHERE j.next_at <= $1{filter} ORDER BY j.next_at LIMIT {scan}{lock}"
        ),
        &params,
    )? {
        if taken.len() as i64 >= limit {
            break;
        }
        let (job, account) = (r.int(0)?, r.int(1)?);
        if pick(account) {
            taken.push((job, account));
        }
    }
    let mut claimed = Vec::with_capacity(taken.len());
    for (job, account) in taken {
        let Some(r) = conn.query_opt(
            "SELECT j.id, j.audio_file_id, j.revision, j.attempts + 1, COALESCE(f.content_type, ''), c.original, f.voice \
             FROM audio_conversions j JOIN audio_files f ON f.id = j.audio_file_id \
             JOIN audio_contents c ON c.audio_file_id = j.audio_file_id WHERE j.id = $1",
            params![job],
        )?
        else {
            continue;
        };
        let c = Claimed {
            job_id: r.int(0)?,
            audio_file_id: r.int(1)?,
            revision: r.int(2)?,
            attempts: r.int(3)?,
            content_type: r.text(4)?,
            original: r.blob(5)?,
            account_id: account,
            voice: r.opt_text(6)?,
        };
        conn.execute(
            "UPDATE audio_conversions SET next_at = $1, attempts = $2 WHERE id = $3",
            params![now.plus_ms(lease_ms), c.attempts, c.job_id],
        )?;
        claimed.push(c);
    }
    Ok(claimed)
}

/// Moves the file to `processing` if it is still `pending-conversion` at `revision`; returns
/// the file when it moved (a re-claim after a crash finds it already processing).
pub fn start_processing(
    conn: &mut dyn Conn,
    file_id: i64,
    revision: i64,
    now: Timestamp,
) -> Result<Option<AudioFile>, DbError> {
    conn.query_opt(
        &format!(
            "UPDATE audio_files SET status = $1, updated = $2 WHERE id = $3 AND revision = $4 AND status = $5 RETURNING {COLUMNS}"
        ),
        params![PROCESSING, now, file_id, revision, PENDING_CONVERSION],
    )?
    .map(|r| from_row(&r))
    .transpose()
}

/// How a conversion ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Converted audio and its duration in milliseconds.
    Ready {
        /// The WAV file.
        wav: Vec<u8>,
        /// Its duration.
        duration_ms: i64,
    },
    /// Why it failed.
    Failed(String),
}

/// Records the end of a conversion job: the file becomes `ready` or `error` and the job is
/// removed. Returns None, changing nothing, when the job is gone or was re-queued for newer
/// content meanwhile (the file was deleted or got new content).
pub fn finish_conversion(
    conn: &mut dyn Conn,
    claimed: &Claimed,
    outcome: &Outcome,
    now: Timestamp,
) -> Result<Option<AudioFile>, DbError> {
    let removed = conn.execute(
        "DELETE FROM audio_conversions WHERE id = $1 AND revision = $2",
        params![claimed.job_id, claimed.revision],
    )?;
    if removed == 0 {
        return Ok(None);
    }
    let row = match outcome {
        Outcome::Ready { wav, duration_ms } => {
            conn.execute(
                "UPDATE audio_contents SET converted = $1 WHERE audio_file_id = $2",
                params![wav.as_slice(), claimed.audio_file_id],
            )?;
            conn.query_opt(
                &format!(
                    "UPDATE audio_files SET status = $1, duration_ms = $2, error = NULL, updated = $3 \
                     WHERE id = $4 AND revision = $5 RETURNING {COLUMNS}"
                ),
                params![READY, *duration_ms, now, claimed.audio_file_id, claimed.revision],
            )?
        }
        Outcome::Failed(reason) => conn.query_opt(
            &format!(
                "UPDATE audio_files SET status = $1, duration_ms = NULL, error = $2, updated = $3 \
                 WHERE id = $4 AND revision = $5 RETURNING {COLUMNS}"
            ),
            params![
                ERROR,
                reason.as_str(),
                now,
                claimed.audio_file_id,
                claimed.revision
            ],
        )?,
    };
    row.map(|r| from_row(&r)).transpose()
}

/// The converted audio of a `ready` file of the account: None when there is no such file,
/// Some(None) when it is not ready.
pub fn converted(
    conn: &mut dyn Conn,
    account_id: i64,
    sid: &Sid,
) -> Result<Option<Option<Vec<u8>>>, DbError> {
    let Some(file) = get(conn, account_id, sid)? else {
        return Ok(None);
    };
    if file.status != READY {
        return Ok(Some(None));
    }
    Ok(Some(
        conn.query_opt(
            "SELECT converted FROM audio_contents WHERE audio_file_id = $1",
            params![file.id],
        )?
        .map(|r| r.opt_blob(0))
        .transpose()?
        .flatten(),
    ))
}

/// The account holding the file `sid`, for a signed link that names no account.
pub fn owner(conn: &mut dyn Conn, sid: &Sid) -> Result<Option<i64>, DbError> {
    conn.query_opt(
        "SELECT account_id FROM audio_files WHERE sid = $1",
        params![sid.as_str()],
    )?
    .map(|r| r.int(0))
    .transpose()
}

/// Countries whose inventory has a number no account holds or reserves.
pub fn countries_with_free_numbers(conn: &mut dyn Conn) -> Result<Vec<String>, DbError> {
    conn.query(
        "SELECT DISTINCT country FROM numbers WHERE account_id IS NULL AND reservation_id IS NULL ORDER BY country",
        params![],
    )?
    .iter()
    .map(|r| r.text(0))
    .collect()
}

/// The number that answers recording calls for `country`: the last free number (by E.164) of
/// its inventory, the one the number store hands out last.
pub fn recording_number(conn: &mut dyn Conn, country: &str) -> Result<Option<E164>, DbError> {
    conn.query_opt(
        "SELECT e164 FROM numbers WHERE country = $1 AND account_id IS NULL AND reservation_id IS NULL \
         ORDER BY e164 DESC LIMIT 1",
        params![country],
    )?
    .map(|r| r.text(0).map(E164::from_stored))
    .transpose()
}

/// Records a recording code for the file; false (nothing stored) when the same code is
/// already live on that number, so the caller draws another.
pub fn create_phone_id(
    conn: &mut dyn Conn,
    file_id: i64,
    number: &E164,
    code: &str,
    expires: Timestamp,
    now: Timestamp,
) -> Result<bool, DbError> {
    if conn
        .query_opt(
            "SELECT 1 FROM audio_phone_ids WHERE e164 = $1 AND code = $2 AND expires > $3 AND used IS NULL",
            params![number, code, now],
        )?
        .is_some()
    {
        return Ok(false);
    }
    conn.execute(
        "INSERT INTO audio_phone_ids (audio_file_id, e164, code, expires, created) VALUES ($1, $2, $3, $4, $5)",
        params![file_id, number, code, expires, now],
    )?;
    Ok(true)
}

/// When the first of `keys` (with its limit of failures in `window_ms`) that is locked out
/// may try again; None when none is.
pub fn phone_code_lockout(
    conn: &mut dyn Conn,
    keys: &[(String, i64)],
    window_ms: i64,
    now: Timestamp,
) -> Result<Option<Timestamp>, DbError> {
    for (key, limit) in keys {
        let row = conn.query_opt(
            "SELECT window_start, failures FROM phone_code_failures WHERE key = $1",
            params![key],
        )?;
        if let Some(r) = row {
            let (start, failures) = (r.int(0)?, r.int(1)?);
            if now.millis() - start < window_ms && failures >= *limit {
                return Ok(Some(Timestamp::from_millis(start + window_ms)));
            }
        }
    }
    Ok(None)
}

/// Counts one wrong code against each of `keys` (a window starts over once it ended).
pub fn phone_code_failed(
    conn: &mut dyn Conn,
    keys: &[String],
    window_ms: i64,
    now: Timestamp,
) -> Result<(), DbError> {
    for key in keys {
        conn.execute(
            "INSERT INTO phone_code_failures (key, window_start, failures) VALUES ($1, $2, 1) \
             ON CONFLICT (key) DO UPDATE SET \
               failures = CASE WHEN $2 - phone_code_failures.window_start >= $3 THEN 1 ELSE phone_code_failures.failures + 1 END, \
               window_start = CASE WHEN $2 - phone_code_failures.window_start >= $3 THEN $2 ELSE phone_code_failures.window_start END",
            params![key, now, window_ms],
        )?;
    }
    Ok(())
}

/// Consumes the live code `code` of `number`, for a file of `account` when the call is an
/// account's own (a sandbox call): marks it used and returns the file's internal key, or
/// None when no such unexpired, unused code exists.
pub fn use_phone_id(
    conn: &mut dyn Conn,
    number: &E164,
    code: &str,
    account: Option<i64>,
    now: Timestamp,
) -> Result<Option<i64>, DbError> {
    let row = match account {
        Some(account) => conn.query_opt(
            "SELECT p.id, p.audio_file_id FROM audio_phone_ids p JOIN audio_files f ON f.id = p.audio_file_id \
             WHERE p.e164 = $1 AND p.code = $2 AND p.expires > $3 AND p.used IS NULL AND f.account_id = $4 \
             ORDER BY p.id DESC LIMIT 1",
            params![number, code, now, account],
        )?,
        None => conn.query_opt(
            "SELECT id, audio_file_id FROM audio_phone_ids WHERE e164 = $1 AND code = $2 AND expires > $3 AND used IS NULL \
             ORDER BY id DESC LIMIT 1",
            params![number, code, now],
        )?,
    };
    let Some(row) = row else {
        return Ok(None);
    };
    let (id, file_id) = (row.int(0)?, row.int(1)?);
    let taken = conn.execute(
        "UPDATE audio_phone_ids SET used = $1 WHERE id = $2 AND used IS NULL",
        params![now, id],
    )?;
    Ok((taken == 1).then_some(file_id))
}
