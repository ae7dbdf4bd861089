//! Calls and their call detail records (CDR), the timeline of what happened on each call
//! (for the sandbox), and the recordings calls make.

use dialtone_domain::{Money, Sid, Timestamp};

use crate::params;
use crate::sql::{Conn, DbError, Row};

/// A call (one leg).
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    /// Internal key.
    pub id: i64,
    /// Public call id (digits).
    pub callid: String,
    /// The account it belongs to (the owner of the number called, or the caller).
    pub account_id: i64,
    /// `inbound` or `outbound`.
    pub direction: String,
    /// Calling number.
    pub caller: String,
    /// Called number.
    pub callee: String,
    /// The account's number involved (called for inbound, forwarding for outbound).
    pub number: Option<String>,
    /// Scenario sid that handled it.
    pub scenario_sid: Option<String>,
    /// `ringing`, `answered` or `ended`.
    pub status: String,
    /// Start.
    pub started: Timestamp,
    /// Answer.
    pub answered: Option<Timestamp>,
    /// End.
    pub ended: Option<Timestamp>,
    /// Q.850 cause.
    pub hangup_cause: Option<i64>,
    /// `caller`, `callee` or `system`.
    pub hangup_source: Option<String>,
    /// Billed amount.
    pub billing_debit: Money,
    /// The inbound leg an outbound leg was dialled from.
    pub parent_id: Option<i64>,
    /// DTMF digits received and not yet consumed.
    pub dtmf: String,
}

const COLUMNS: &str = "id, callid, account_id, direction, caller, callee, number, scenario_sid, status, started, answered, ended, hangup_cause, hangup_source, billing_debit, parent_id, dtmf";

fn from_row(r: &Row) -> Result<Call, DbError> {
    Ok(Call {
        id: r.int(0)?,
        callid: r.text(1)?,
        account_id: r.int(2)?,
        direction: r.text(3)?,
        caller: r.text(4)?,
        callee: r.text(5)?,
        number: r.opt_text(6)?,
        scenario_sid: r.opt_text(7)?,
        status: r.text(8)?,
        started: r.timestamp(9)?,
        answered: r.opt_timestamp(10)?,
        ended: r.opt_timestamp(11)?,
        hangup_cause: r.opt_int(12)?,
        hangup_source: r.opt_text(13)?,
        billing_debit: r.money(14)?,
        parent_id: r.opt_int(15)?,
        dtmf: r.text(16)?,
    })
}

/// A new call.
#[derive(Debug, Clone)]
pub struct NewCall<'a> {
    /// Owner.
    pub account_id: i64,
    /// Direction.
    pub direction: &'a str,
    /// Calling number.
    pub caller: &'a str,
    /// Called number.
    pub callee: &'a str,
    /// The account's number involved.
    pub number: Option<&'a str>,
    /// Scenario sid.
    pub scenario_sid: Option<&'a str>,
    /// Parent leg.
    pub parent_id: Option<i64>,
}

fn new_callid() -> String {
    // Real call ids are integers; 12 random digits, first not zero.
    let n: u64 = rand::random_range(100_000_000_000..1_000_000_000_000);
    n.to_string()
}

/// Stores a ringing call.
pub fn create(conn: &mut dyn Conn, new: &NewCall<'_>, now: Timestamp) -> Result<Call, DbError> {
    loop {
        let row = conn.query_opt(
            &format!(
                "INSERT INTO calls (callid, account_id, direction, caller, callee, number, scenario_sid, status, started, parent_id, updated) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, 'ringing', $8, $9, $8) ON CONFLICT (callid) DO NOTHING RETURNING {COLUMNS}"
            ),
            params![
                new_callid(),
                new.account_id,
                new.direction,
                new.caller,
                new.callee,
                new.number,
                new.scenario_sid,
                now,
                new.parent_id
            ],
        )?;
        if let Some(r) = row {
            return from_row(&r);
        }
    }
}

/// A call by call id, whoever owns it (the sandbox addresses calls by id alone).
pub fn by_callid(conn: &mut dyn Conn, callid: &str) -> Result<Option<Call>, DbError> {
    conn.query_opt(
        &format!("SELECT {COLUMNS} FROM calls WHERE callid = $1"),
        params![callid],
    )?
    .map(|r| from_row(&r))
    .transpose()
}

/// A call by internal key.
pub fn by_id(conn: &mut dyn Conn, id: i64) -> Result<Option<Call>, DbError> {
    conn.query_opt(
        &format!("SELECT {COLUMNS} FROM calls WHERE id = $1"),
        params![id],
    )?
    .map(|r| from_row(&r))
    .transpose()
}

/// Marks a ringing call answered; false when it was not ringing.
pub fn answer(conn: &mut dyn Conn, id: i64, now: Timestamp) -> Result<bool, DbError> {
    Ok(conn.execute(
        "UPDATE calls SET status = 'answered', answered = $1, updated = $1 WHERE id = $2 AND status = 'ringing'",
        params![now, id],
    )? == 1)
}

/// Ends a live call; None when it had already ended (so only one hangup counts).
pub fn end(
    conn: &mut dyn Conn,
    id: i64,
    cause: i64,
    source: &str,
    now: Timestamp,
) -> Result<Option<Call>, DbError> {
    conn.query_opt(
        &format!(
            "UPDATE calls SET status = 'ended', ended = $1, hangup_cause = $2, hangup_source = $3, updated = $1 \
             WHERE id = $4 AND status <> 'ended' RETURNING {COLUMNS}"
        ),
        params![now, cause, source, id],
    )?
    .map(|r| from_row(&r))
    .transpose()
}

/// Records the amount billed for a call.
pub fn set_debit(conn: &mut dyn Conn, id: i64, debit: Money) -> Result<(), DbError> {
    conn.execute(
        "UPDATE calls SET billing_debit = $1 WHERE id = $2",
        params![debit, id],
    )?;
    Ok(())
}

/// Appends DTMF digits to the call's buffer.
pub fn push_dtmf(conn: &mut dyn Conn, id: i64, digits: &str) -> Result<(), DbError> {
    conn.execute(
        "UPDATE calls SET dtmf = dtmf || $1 WHERE id = $2",
        params![digits, id],
    )?;
    Ok(())
}

/// Replaces the call's unconsumed DTMF digits.
pub fn set_dtmf(conn: &mut dyn Conn, id: i64, digits: &str) -> Result<(), DbError> {
    conn.execute(
        "UPDATE calls SET dtmf = $1 WHERE id = $2",
        params![digits, id],
    )?;
    Ok(())
}

/// Stores the audio the caller sent (what a recording of this call captures).
pub fn set_audio(conn: &mut dyn Conn, id: i64, wav: &[u8]) -> Result<(), DbError> {
    conn.execute(
        "UPDATE calls SET audio = $1 WHERE id = $2",
        params![wav.to_vec(), id],
    )?;
    Ok(())
}

/// The audio the caller sent, if any.
pub fn audio(conn: &mut dyn Conn, id: i64) -> Result<Option<Vec<u8>>, DbError> {
    match conn.query_opt("SELECT audio FROM calls WHERE id = $1", params![id])? {
        Some(r) => r.opt_blob(0),
        None => Ok(None),
    }
}

/// One thing that happened on a call.
#[derive(Debug, Clone, PartialEq)]
pub struct TimelineEntry {
    /// When.
    pub at: Timestamp,
    /// What (`ringing`, `answered`, `say`, `play`, `dtmf`, `gather`, `record`, `dial`, `hangup`...).
    pub kind: String,
    /// Details (JSON object).
    pub data: String,
}

/// Appends to a call's timeline.
pub fn log(
    conn: &mut dyn Conn,
    call_id: i64,
    kind: &str,
    data: &str,
    now: Timestamp,
) -> Result<(), DbError> {
    conn.execute(
        "INSERT INTO call_timeline (call_id, at, kind, data) VALUES ($1, $2, $3, $4)",
        params![call_id, now, kind, data],
    )?;
    Ok(())
}

/// A call's timeline, oldest first.
pub fn timeline(conn: &mut dyn Conn, call_id: i64) -> Result<Vec<TimelineEntry>, DbError> {
    conn.query(
        "SELECT at, kind, data FROM call_timeline WHERE call_id = $1 ORDER BY id",
        params![call_id],
    )?
    .iter()
    .map(|r| {
        Ok(TimelineEntry {
            at: r.timestamp(0)?,
            kind: r.text(1)?,
            data: r.text(2)?,
        })
    })
    .collect()
}

/// A recording made on a call.
#[derive(Debug, Clone)]
pub struct NewRecording<'a> {
    /// Owner.
    pub account_id: i64,
    /// `call` or `voicemail`.
    pub kind: &'a str,
    /// Calling number.
    pub caller: &'a str,
    /// Called number.
    pub callee: &'a str,
    /// Call id.
    pub callid: &'a str,
    /// Seconds.
    pub duration: i64,
    /// WAV audio.
    pub audio: &'a [u8],
}

/// Stores a recording; returns its sid.
pub fn create_recording(
    conn: &mut dyn Conn,
    new: &NewRecording<'_>,
    now: Timestamp,
) -> Result<Sid, DbError> {
    loop {
        let sid = Sid::generate();
        let n = conn.execute(
            "INSERT INTO recordings (sid, account_id, type, caller, callee, callid, duration, audio, created) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT (sid) DO NOTHING",
            params![
                &sid,
                new.account_id,
                new.kind,
                new.caller,
                new.callee,
                new.callid,
                new.duration,
                new.audio.to_vec(),
                now
            ],
        )?;
        if n == 1 {
            return Ok(sid);
        }
    }
}

/// Forgets the audio the caller sent (a recording took it).
pub fn set_audio_none(conn: &mut dyn Conn, id: i64) -> Result<(), DbError> {
    conn.execute("UPDATE calls SET audio = NULL WHERE id = $1", params![id])?;
    Ok(())
}
