//! Calls and their call detail records (CDR), the timeline of what happened on each call
//! (for the sandbox), and the recordings calls make.

use dialtone_domain::call::{
    CallDirection, CallStatus, HangupSource, RecordingKind, TranscriptStatus,
};
use dialtone_domain::{Money, Sid, Timestamp};

use crate::params;
use crate::sql::{Conn, DbError};

/// A call (one leg).
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    /// Internal key.
    pub id: i64,
    /// Public call id (digits).
    pub callid: String,
    /// The account it belongs to (the owner of the number called, or the caller).
    pub account_id: i64,
    /// Which way it goes.
    pub direction: CallDirection,
    /// Calling number.
    pub caller: String,
    /// Called number.
    pub callee: String,
    /// The account's number involved (called for inbound, forwarding for outbound).
    pub number: Option<String>,
    /// Scenario sid that handled it.
    pub scenario_sid: Option<String>,
    /// Where it is in its life.
    pub status: CallStatus,
    /// Start.
    pub started: Timestamp,
    /// Answer.
    pub answered: Option<Timestamp>,
    /// End.
    pub ended: Option<Timestamp>,
    /// Q.850 cause.
    pub hangup_cause: Option<i64>,
    /// Who ended it.
    pub hangup_source: Option<HangupSource>,
    /// Billed amount.
    pub billing_debit: Money,
    /// The inbound leg an outbound leg was dialled from.
    pub parent_id: Option<i64>,
    /// DTMF digits received and not yet consumed.
    pub dtmf: String,
    /// The voice network carrying it (`simulated`, or a SIP trunk's name).
    pub network: String,
}

crate::row_decoder! {
    const COLUMNS; fn from_row -> Call {
        id: int("id"),
        callid: text("callid"),
        account_id: int("account_id"),
        direction: word("direction"),
        caller: text("caller"),
        callee: text("callee"),
        number: opt_text("number"),
        scenario_sid: opt_text("scenario_sid"),
        status: word("status"),
        started: timestamp("started"),
        answered: opt_timestamp("answered"),
        ended: opt_timestamp("ended"),
        hangup_cause: opt_int("hangup_cause"),
        hangup_source: opt_word("hangup_source"),
        billing_debit: money("billing_debit"),
        parent_id: opt_int("parent_id"),
        dtmf: text("dtmf"),
        network: text("network"),
    }
}

/// A new call.
#[derive(Debug, Clone)]
pub struct NewCall<'a> {
    /// Owner.
    pub account_id: i64,
    /// Direction.
    pub direction: CallDirection,
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
    /// The voice network carrying it.
    pub network: &'a str,
    /// The call id it gets, when the platform chose it beforehand (a dialled leg the
    /// network carries under it as soon as it answers); None draws one.
    pub callid: Option<&'a str>,
}

/// A new call id: 12 random digits, the first not zero (real call ids are integers).
pub fn new_callid() -> String {
    // Real call ids are integers; 12 random digits, first not zero.
    let n: u64 = rand::random_range(100_000_000_000..1_000_000_000_000);
    n.to_string()
}

/// Stores a ringing call.
pub fn create(conn: &mut dyn Conn, new: &NewCall<'_>, now: Timestamp) -> Result<Call, DbError> {
    loop {
        let callid = new.callid.map_or_else(new_callid, str::to_owned);
        let row = conn.query_opt(
            &format!(
                "INSERT INTO calls (callid, account_id, direction, caller, callee, number, scenario_sid, status, started, parent_id, updated, network) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, 'ringing', $8, $9, $8, $10) ON CONFLICT (callid) DO NOTHING RETURNING {COLUMNS}"
            ),
            params![
                callid.as_str(),
                new.account_id,
                new.direction.as_str(),
                new.caller,
                new.callee,
                new.number,
                new.scenario_sid,
                now,
                new.parent_id,
                new.network
            ],
        )?;
        if let Some(r) = row {
            return from_row(&r);
        }
        if new.callid.is_some() {
            return Err(DbError::Other(format!("call id {callid} is taken")));
        }
    }
}

/// A call by its call id, whatever its account (a network reporting on a call it carries:
/// call ids are unique).
pub fn by_callid_any(conn: &mut dyn Conn, callid: &str) -> Result<Option<Call>, DbError> {
    conn.query_opt(
        &format!("SELECT {COLUMNS} FROM calls WHERE callid = $1"),
        params![callid],
    )?
    .map(|r| from_row(&r))
    .transpose()
}

/// A call of the account by its call id.
pub fn by_callid(
    conn: &mut dyn Conn,
    account_id: i64,
    callid: &str,
) -> Result<Option<Call>, DbError> {
    conn.query_opt(
        &format!("SELECT {COLUMNS} FROM calls WHERE callid = $1 AND account_id = $2"),
        params![callid, account_id],
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
    source: HangupSource,
    now: Timestamp,
) -> Result<Option<Call>, DbError> {
    conn.query_opt(
        &format!(
            "UPDATE calls SET status = 'ended', ended = $1, hangup_cause = $2, hangup_source = $3, updated = $1 \
             WHERE id = $4 AND status <> 'ended' RETURNING {COLUMNS}"
        ),
        params![now, cause, source.as_str(), id],
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

/// Keeps the recording of the whole call a network delivered (both directions), apart
/// from the audio a voicemail takes (None once the call recordings hold it).
pub fn set_call_audio(conn: &mut dyn Conn, id: i64, wav: Option<&[u8]>) -> Result<(), DbError> {
    conn.execute(
        "UPDATE calls SET call_audio = $1 WHERE id = $2",
        params![wav.map(<[u8]>::to_vec), id],
    )?;
    Ok(())
}

/// The audio of a call recording: the whole call a network recorded, else (a network that
/// carries no media) the audio the caller sent.
pub fn call_audio(conn: &mut dyn Conn, id: i64) -> Result<Option<Vec<u8>>, DbError> {
    match conn.query_opt(
        "SELECT COALESCE(call_audio, audio) FROM calls WHERE id = $1",
        params![id],
    )? {
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
    /// What it holds.
    pub kind: RecordingKind,
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
    /// The transcription asked for it, if any.
    pub transcription: Option<Transcription<'a>>,
}

/// A transcription asked for a new recording.
#[derive(Debug, Clone, Copy)]
pub struct Transcription<'a> {
    /// The language (BCP 47).
    pub language: &'a str,
    /// `pending` (a worker makes it), or `unsupported` at once (no model for the language).
    pub status: TranscriptStatus,
    /// Why it is not made, when unsupported.
    pub error: Option<&'a str>,
    /// The run and fiber whose `ready` event waits for the transcript.
    pub waiter: Option<(i64, u32)>,
}

/// Stores a recording; returns its sid.
pub fn create_recording(
    conn: &mut dyn Conn,
    new: &NewRecording<'_>,
    now: Timestamp,
) -> Result<Sid, DbError> {
    let t = new.transcription;
    let due = t
        .filter(|t| t.status == TranscriptStatus::Pending)
        .map(|_| now);
    loop {
        let sid = Sid::generate();
        let n = conn.execute(
            "INSERT INTO recordings (sid, account_id, type, caller, callee, callid, duration, audio, created, \
             transcript_status, transcript_language, transcript_error, transcript_next_at, transcript_run, transcript_fiber) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15) ON CONFLICT (sid) DO NOTHING",
            params![
                &sid,
                new.account_id,
                new.kind.as_str(),
                new.caller,
                new.callee,
                new.callid,
                new.duration,
                new.audio.to_vec(),
                now,
                t.map(|t| t.status.as_str()),
                t.map(|t| t.language),
                t.and_then(|t| t.error),
                due,
                t.and_then(|t| t.waiter).map(|w| w.0),
                t.and_then(|t| t.waiter).map(|w| i64::from(w.1))
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

/// Which calls a console list shows.
#[derive(Debug, Clone, Default)]
pub struct CallFilter {
    /// Inbound or outbound.
    pub direction: Option<CallDirection>,
    /// Where the call stands.
    pub status: Option<CallStatus>,
    /// The caller or the callee.
    pub party: Option<String>,
}

impl CallFilter {
    /// Appends the filter's conditions (no index serves them: a page reads at most
    /// [`crate::search::SCAN_WINDOW`] calls).
    fn narrow(&self, q: &mut crate::sql::SqlBuilder) {
        if let Some(d) = self.direction {
            q.push(" AND direction = ").bind(d.as_str());
        }
        if let Some(s) = self.status {
            q.push(" AND status = ").bind(s.as_str());
        }
        if let Some(p) = &self.party {
            q.push(" AND (caller = ").bind(p.as_str());
            q.push(" OR callee = ").bind(p.as_str());
            q.push(")");
        }
    }
}

/// A page of the account's calls newest first, from after `keyset`'s id, through the
/// (account, id) index; a filtered page reads at most [`crate::search::SCAN_WINDOW`] calls.
pub fn newest(
    conn: &mut dyn Conn,
    account_id: i64,
    f: &CallFilter,
    keyset: &crate::search::Keyset,
) -> Result<crate::search::Scanned<Call>, DbError> {
    let mut q = crate::sql::SqlBuilder::new("FROM calls WHERE account_id = ");
    q.bind(account_id);
    let narrow = |q: &mut crate::sql::SqlBuilder| f.narrow(q);
    let filtered = f.direction.is_some() || f.status.is_some() || f.party.is_some();
    let scanned = crate::search::newest_first_within(
        conn,
        COLUMNS,
        &q,
        filtered.then_some(&narrow as &dyn Fn(&mut crate::sql::SqlBuilder)),
        None,
        "id",
        keyset,
        crate::search::SCAN_WINDOW,
    )?;
    scanned.try_map(from_row)
}
