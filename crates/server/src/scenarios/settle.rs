//! The waits of a run that are over once the outside world moved: digits gathered, a
//! voicemail delivered, a timer or a fallback deadline passed, a prompt whose call ended.
//! Runs inside the transaction that saves the step (or the poll).

use dialtone_actions::Event;
use dialtone_domain::call::RecordingKind;
use dialtone_store::calls::{self, Call};
use dialtone_store::{Conn, DbError};
use serde_json::{Value, json};

use super::pending::Pending;
use super::scope::Scope;
use crate::voice::legs::timeline;
use crate::voice::recordings::{self, Recorded};

/// The digits a gather takes from the buffer: what it answers and how much it used, or
/// None while it still waits.
fn gathered(
    dtmf: &str,
    max_digits: u32,
    finish_on_key: Option<&str>,
    over: bool,
) -> Option<(String, &'static str, usize)> {
    let mut digits = String::new();
    let mut used = 0;
    for ch in dtmf.chars() {
        used += ch.len_utf8();
        if finish_on_key.is_some_and(|k| k.starts_with(ch)) {
            return Some((digits, "finishOnKey", used));
        }
        digits.push(ch);
        if digits.chars().count() as u32 >= max_digits {
            return Some((digits, "maxDigits", used));
        }
    }
    over.then_some((digits, "timeout", dtmf.len()))
}

/// A voicemail being recorded.
struct Voicemail {
    fiber: u32,
    started: i64,
    deadline: i64,
    transcription: Option<String>,
}

/// Stores a voicemail whose audio came, whose longest duration passed or whose call ended,
/// and answers its fiber; false while it goes on. `audio` is the call's audio, read once.
fn voicemail_over(
    c: &mut dyn Conn,
    s: &mut Scope<'_>,
    k: &Call,
    v: &Voicemail,
    audio: &mut Option<Option<Vec<u8>>>,
) -> Result<bool, DbError> {
    let now = s.now;
    let posted = match audio {
        Some(a) => a.clone(),
        None => {
            let a = calls::audio(c, k.id)?;
            *audio = Some(a.clone());
            a
        }
    };
    if posted.is_none() && now.millis() < v.deadline && k.status.is_live() {
        return Ok(false);
    }
    let recorded = Recorded {
        kind: RecordingKind::Voicemail,
        started: v.started,
        end: now.millis().min(v.deadline),
        audio: posted,
        // Transcribed by the workers; the recording's fiber goes on meanwhile.
        transcription: v.transcription.clone().map(|language| (language, None)),
    };
    let recording = recordings::store(c, k, recorded, now)?;
    calls::set_audio_none(c, k.id)?;
    *audio = Some(None);
    s.out.events.push(Event::Result {
        fiber: v.fiber,
        value: recording,
    });
    s.out.woke = true;
    Ok(true)
}

/// Answers the waits that are over: digits gathered, audio recorded, timers due.
pub(crate) fn settle(c: &mut dyn Conn, s: &mut Scope<'_>) -> Result<(), DbError> {
    let now = s.now;
    let call = s.call.clone();
    let call = call.as_ref();
    let mut dtmf = call.map(|k| k.dtmf.clone()).unwrap_or_default();
    let original = dtmf.clone();
    let mut audio: Option<Option<Vec<u8>>> = None;
    let mut kept = Vec::with_capacity(s.waits.len());
    for wait in std::mem::take(s.waits) {
        match &wait {
            Pending::Gather {
                fiber,
                max_digits,
                min_digits,
                finish_on_key,
                deadline,
                ..
            } => {
                let over = now.millis() >= *deadline;
                match gathered(&dtmf, *max_digits, finish_on_key.as_deref(), over) {
                    Some((digits, reason, used)) => {
                        dtmf = dtmf[used..].to_owned();
                        let ok = digits.chars().count() as u32 >= *min_digits;
                        if let Some(k) = call {
                            let data = json!({"digits": digits, "reason": reason});
                            timeline(c, k.id, "gathered", &data, now)?;
                        }
                        s.out.events.push(Event::Result {
                            fiber: *fiber,
                            value: json!({"digits": digits, "reason": reason, "ok": ok}),
                        });
                    }
                    None => kept.push(wait),
                }
            }
            Pending::Record {
                fiber,
                started,
                deadline,
                transcription,
            } => {
                let Some(k) = call else { continue };
                let voicemail = Voicemail {
                    fiber: *fiber,
                    started: *started,
                    deadline: *deadline,
                    transcription: transcription.clone(),
                };
                if !voicemail_over(c, s, k, &voicemail, &mut audio)? {
                    kept.push(wait);
                }
            }
            Pending::Playing { fiber, deadline } => {
                // Over by its network's word (`played`), else by the end of its call or the
                // fallback deadline.
                if now.millis() >= *deadline || !call.is_some_and(|k| k.status.is_live()) {
                    s.out.events.push(Event::Result {
                        fiber: *fiber,
                        value: Value::Null,
                    });
                } else {
                    kept.push(wait);
                }
            }
            Pending::Wait { fiber, deadline } => {
                if now.millis() >= *deadline {
                    s.out.events.push(Event::Result {
                        fiber: *fiber,
                        value: Value::Null,
                    });
                } else {
                    kept.push(wait);
                }
            }
            Pending::Dialing {
                fiber, deadline, ..
            } => {
                if now.millis() >= *deadline {
                    s.out.events.push(Event::Result {
                        fiber: *fiber,
                        value: json!({"ok": false, "status": "no-answer", "target": null}),
                    });
                } else {
                    kept.push(wait);
                }
            }
            // Answered when the call ends (see `hangup`); answers wait for the driver.
            Pending::CallRecording { .. }
            | Pending::Dial { .. }
            | Pending::Bridge { .. }
            | Pending::Answer { .. } => {
                kept.push(wait);
            }
        }
    }
    *s.waits = kept;
    if let Some(k) = call
        && dtmf != original
    {
        calls::set_dtmf(c, k.id, &dtmf)?;
    }
    Ok(())
}
