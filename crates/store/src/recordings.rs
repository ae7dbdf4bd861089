//! Recordings made on calls (`record@v1` voicemails, `startRecording@v1` call recordings):
//! search, read marks, deletion, and their audio.

use dialtone_domain::{Sid, Timestamp};

use crate::params;
use crate::search::{self, Paging};
use crate::sql::{Conn, DbError, Row, SqlBuilder};

/// A recording (without its audio).
#[derive(Debug, Clone, PartialEq)]
pub struct Recording {
    /// Internal key.
    pub id: i64,
    /// Public identifier.
    pub sid: Sid,
    /// `call` or `voicemail`.
    pub kind: String,
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
    /// Creation.
    pub created: Timestamp,
}

const COLUMNS: &str =
    "id, sid, type, caller, callee, callid, duration, read_at, transcript, created";

fn from_row(r: &Row) -> Result<Recording, DbError> {
    Ok(Recording {
        id: r.int(0)?,
        sid: Sid::from_stored(r.text(1)?),
        kind: r.text(2)?,
        caller: r.text(3)?,
        callee: r.text(4)?,
        callid: r.text(5)?,
        duration: r.int(6)?,
        read_at: r.opt_timestamp(7)?,
        transcript: r.opt_text(8)?,
        created: r.timestamp(9)?,
    })
}

/// Search filters.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    /// Exactly this sid.
    pub sid: Option<Sid>,
    /// `call` or `voicemail`.
    pub kind: Option<String>,
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
    for (column, value) in [
        ("type", &f.kind),
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
