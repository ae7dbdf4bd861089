//! Recordings made on calls (`record@v1` voicemails, `startRecording@v1` call recordings):
//! search, read marks, deletion, and their audio.

use dialtone_domain::call::{RecordingKind, TranscriptStatus};
use dialtone_domain::{Sid, Timestamp};

use crate::params;
use crate::search::{self, Paging};
use crate::sql::{Conn, DbError, SqlBuilder};

/// A recording (without its audio).
#[derive(Debug, Clone, PartialEq)]
pub struct Recording {
    /// Internal key.
    pub id: i64,
    /// Public identifier.
    pub sid: Sid,
    /// What it holds.
    pub kind: RecordingKind,
    /// Calling number.
    pub caller: String,
    /// Called number.
    pub callee: String,
    /// Call id.
    pub callid: String,
    /// Seconds.
    pub duration: i64,
    /// When it was marked read.
    pub read_at: Option<Timestamp>,
    /// Transcript, if any.
    pub transcript: Option<String>,
    /// Where its transcription stands, when one was asked for.
    pub transcript_status: Option<TranscriptStatus>,
    /// The language of the transcription asked for.
    pub transcript_language: Option<String>,
    /// Why the transcription failed or was not made.
    pub transcript_error: Option<String>,
    /// Creation.
    pub created: Timestamp,
}

crate::row_decoder! {
    const COLUMNS; fn from_row -> Recording {
        id: int("id"),
        sid: sid("sid"),
        kind: word("type"),
        caller: text("caller"),
        callee: text("callee"),
        callid: text("callid"),
        duration: int("duration"),
        read_at: opt_timestamp("read_at"),
        transcript: opt_text("transcript"),
        transcript_status: opt_word("transcript_status"),
        transcript_language: opt_text("transcript_language"),
        transcript_error: opt_text("transcript_error"),
        created: timestamp("created"),
    }
}

/// Search filters.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    /// Exactly this sid.
    pub sid: Option<Sid>,
    /// What it holds.
    pub kind: Option<RecordingKind>,
    /// Calling number.
    pub caller: Option<String>,
    /// Called number.
    pub callee: Option<String>,
    /// Call id.
    pub callid: Option<String>,
    /// Read or unread.
    pub read: Option<bool>,
    /// Read at or after.
    pub read_after: Option<Timestamp>,
    /// Read before.
    pub read_before: Option<Timestamp>,
    /// Created at or after.
    pub created_after: Option<Timestamp>,
    /// Created before.
    pub created_before: Option<Timestamp>,
    /// At least this many seconds.
    pub min_duration: Option<i64>,
}

/// A page of the account's recordings.
pub fn search(
    conn: &mut dyn Conn,
    account_id: i64,
    f: &Filter,
    paging: &Paging,
) -> Result<(i64, Vec<Recording>), DbError> {
    let mut q = SqlBuilder::new("FROM recordings WHERE account_id = ");
    q.bind(account_id);
    if let Some(v) = &f.sid {
        q.push(" AND sid = ").bind(v);
    }
    if let Some(kind) = f.kind {
        q.push(" AND type = ").bind(kind.as_str());
    }
    for (column, value) in [
        ("caller", &f.caller),
        ("callee", &f.callee),
        ("callid", &f.callid),
    ] {
        if let Some(v) = value {
            q.push(&format!(" AND {column} = ")).bind(v.as_str());
        }
    }
    match f.read {
        Some(true) => {
            q.push(" AND read_at IS NOT NULL");
        }
        Some(false) => {
            q.push(" AND read_at IS NULL");
        }
        None => {}
    }
    if let Some(t) = f.read_after {
        q.push(" AND read_at >= ").bind(t);
    }
    if let Some(t) = f.read_before {
        q.push(" AND read_at < ").bind(t);
    }
    if let Some(t) = f.created_after {
        q.push(" AND created >= ").bind(t);
    }
    if let Some(t) = f.created_before {
        q.push(" AND created < ").bind(t);
    }
    if let Some(d) = f.min_duration {
        q.push(" AND duration >= ").bind(d);
    }
    let (total, rows) = search::page(conn, COLUMNS, &q, "id", paging)?;
    Ok((total, rows.iter().map(from_row).collect::<Result<_, _>>()?))
}

/// A recording of the account.
pub fn get(conn: &mut dyn Conn, account_id: i64, sid: &Sid) -> Result<Option<Recording>, DbError> {
    conn.query_opt(
        &format!("SELECT {COLUMNS} FROM recordings WHERE account_id = $1 AND sid = $2"),
        params![account_id, sid],
    )?
    .map(|r| from_row(&r))
    .transpose()
}

/// Marks a recording read (now) or unread; None when the account has no such recording.
pub fn set_read(
    conn: &mut dyn Conn,
    account_id: i64,
    sid: &Sid,
    read: bool,
    now: Timestamp,
) -> Result<Option<Recording>, DbError> {
    let at = read.then_some(now);
    conn.query_opt(
        &format!(
            "UPDATE recordings SET read_at = CASE WHEN $1 THEN COALESCE(read_at, $2) ELSE NULL END \
             WHERE account_id = $3 AND sid = $4 RETURNING {COLUMNS}"
        ),
        params![read, at, account_id, sid],
    )?
    .map(|r| from_row(&r))
    .transpose()
}

/// Deletes a recording and its audio; false when the account has no such recording.
pub fn delete(conn: &mut dyn Conn, account_id: i64, sid: &Sid) -> Result<bool, DbError> {
    Ok(conn.execute(
        "DELETE FROM recordings WHERE account_id = $1 AND sid = $2",
        params![account_id, sid],
    )? == 1)
}

/// A recording's audio (WAV).
pub fn audio(conn: &mut dyn Conn, account_id: i64, sid: &Sid) -> Result<Option<Vec<u8>>, DbError> {
    match conn.query_opt(
        "SELECT audio FROM recordings WHERE account_id = $1 AND sid = $2",
        params![account_id, sid],
    )? {
        Some(r) => Ok(Some(r.blob(0)?)),
        None => Ok(None),
    }
}

/// The next `limit` recordings of the account after internal key `after`, optionally only
/// those with the given sids: the slices of bulk tasks.
pub fn slice(
    conn: &mut dyn Conn,
    account_id: i64,
    sids: Option<&[String]>,
    after: i64,
    limit: i64,
) -> Result<Vec<(i64, Sid)>, DbError> {
    let mut q = SqlBuilder::new("SELECT id, sid FROM recordings WHERE account_id = ");
    q.bind(account_id);
    q.push(" AND id > ").bind(after);
    if let Some(sids) = sids {
        if sids.is_empty() {
            return Ok(Vec::new());
        }
        only_sids(&mut q, sids);
    }
    q.push(" ORDER BY id LIMIT ").bind(limit);
    conn.query(q.sql(), q.params())?
        .iter()
        .map(|r| Ok((r.int(0)?, Sid::from_stored(r.text(1)?))))
        .collect()
}

/// How many recordings a bulk task would touch.
pub fn count(
    conn: &mut dyn Conn,
    account_id: i64,
    sids: Option<&[String]>,
) -> Result<i64, DbError> {
    let mut q = SqlBuilder::new("SELECT COUNT(*) FROM recordings WHERE account_id = ");
    q.bind(account_id);
    if let Some(sids) = sids {
        if sids.is_empty() {
            return Ok(0);
        }
        only_sids(&mut q, sids);
    }
    conn.query_one(q.sql(), q.params())?.int(0)
}

fn only_sids(q: &mut SqlBuilder, sids: &[String]) {
    q.push(" AND sid IN (");
    for (i, s) in sids.iter().enumerate() {
        if i > 0 {
            q.push(", ");
        }
        q.bind(s.as_str());
    }
    q.push(")");
}

/// A recording to transcribe, claimed by a worker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TranscriptJob {
    /// The recording's internal key.
    pub id: i64,
    /// Its sid.
    pub sid: Sid,
    /// Its account.
    pub account_id: i64,
    /// The language asked for.
    pub language: String,
    /// Claims of it so far, this one included.
    pub attempts: i64,
    /// Its audio (8 kHz WAV).
    pub audio: Vec<u8>,
}

/// Whether a transcription is due at `now` (a cheap read before claiming in a write).
pub fn transcripts_due(conn: &mut dyn Conn, now: Timestamp) -> Result<bool, DbError> {
    Ok(conn
        .query_opt(
            "SELECT 1 FROM recordings WHERE transcript_next_at <= $1 LIMIT 1",
            params![now],
        )?
        .is_some())
}

/// The accounts with due transcriptions (at most 256, those waiting longest first): the
/// worker serves them in turn.
pub fn transcript_accounts(conn: &mut dyn Conn, now: Timestamp) -> Result<Vec<i64>, DbError> {
    conn.query(
        "SELECT account_id FROM recordings WHERE transcript_next_at <= $1 \
         GROUP BY account_id ORDER BY MIN(transcript_next_at) LIMIT 256",
        params![now],
    )?
    .iter()
    .map(|r| r.int(0))
    .collect()
}

/// Claims the oldest due transcription of `account` for `lease_ms` (another node takes it
/// when the lease runs out), counting an attempt; None when it has none (now).
pub fn claim_transcript(
    conn: &mut dyn Conn,
    now: Timestamp,
    lease_ms: i64,
    account: i64,
) -> Result<Option<TranscriptJob>, DbError> {
    let lock = match conn.dialect() {
        crate::sql::Dialect::Postgres => " FOR UPDATE SKIP LOCKED",
        crate::sql::Dialect::Sqlite => "",
    };
    let Some(due) = conn.query_opt(
        &format!(
            "SELECT id FROM recordings WHERE account_id = $1 AND transcript_next_at <= $2 \
             ORDER BY transcript_next_at LIMIT 1{lock}"
        ),
        params![account, now],
    )?
    else {
        return Ok(None);
    };
    let row = conn.query_one(
        "UPDATE recordings SET transcript_next_at = $2, transcript_attempts = transcript_attempts + 1 \
         WHERE id = $1 RETURNING id, sid, account_id, COALESCE(transcript_language, ''), transcript_attempts, audio",
        params![due.int(0)?, now.plus_ms(lease_ms)],
    )?;
    Ok(Some(TranscriptJob {
        id: row.int(0)?,
        sid: Sid::from_stored(row.text(1)?),
        account_id: row.int(2)?,
        language: row.text(3)?,
        attempts: row.int(4)?,
        audio: row.blob(5)?,
    }))
}

/// A transcription ended: the recording as it now stands, its account, and the run and
/// fiber waiting for it, if any.
#[derive(Debug, Clone)]
pub struct Transcribed {
    /// The recording.
    pub recording: Recording,
    /// Its account.
    pub account_id: i64,
    /// The run and fiber whose `ready` event waited for the transcript.
    pub waiter: Option<(i64, u32)>,
}

/// Records the end of a transcription: the text (`Ok`), or why it failed (`Err`, with its
/// status); None when it was already recorded (another node finished it).
pub fn finish_transcript(
    conn: &mut dyn Conn,
    id: i64,
    outcome: Result<&str, (TranscriptStatus, &str)>,
    _now: Timestamp,
) -> Result<Option<Transcribed>, DbError> {
    let (text, status, error) = match outcome {
        Ok(text) => (Some(text), TranscriptStatus::Ready, None),
        Err((status, error)) => (None, status, Some(error)),
    };
    let row = conn.query_opt(
        &format!(
            "UPDATE recordings SET transcript = $2, transcript_status = $3, transcript_error = $4, transcript_next_at = NULL \
             WHERE id = $1 AND transcript_next_at IS NOT NULL RETURNING {COLUMNS}, account_id, transcript_run, transcript_fiber"
        ),
        params![id, text, status.as_str(), error],
    )?;
    let Some(row) = row else {
        return Ok(None);
    };
    let recording = from_row(&row)?;
    let base = COLUMNS.split(", ").count();
    let account_id = row.int(base)?;
    let waiter = match (row.opt_int(base + 1)?, row.opt_int(base + 2)?) {
        (Some(run), Some(fiber)) => u32::try_from(fiber).ok().map(|f| (run, f)),
        _ => None,
    };
    Ok(Some(Transcribed {
        recording,
        account_id,
        waiter,
    }))
}
