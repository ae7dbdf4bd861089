//! What a run's call hears and says: prompts (`say`, `play`, a gather's prompt), digits
//! collected (`gather`) and voicemails (`record`).
//!
//! On the simulated network a prompt is done as soon as it is asked for. On a network that
//! carries media ([`dialtone_carrier::VoiceNetwork::carries_media`]) it takes its real time:
//! the fiber waits ([`Pending::Playing`]) until the network reports it played
//! ([`played`]), a gather's timeout starts when its prompt ends, and a voicemail is given a
//! little longer than its longest duration for the network to deliver it.

use dialtone_carrier::voice::{CallAction, PlayTag};
use dialtone_store::calls::Call;
use dialtone_store::{Conn, DbError};
use serde_json::{Value, json};

use super::pending::Pending;
use super::scope::Scope;
use crate::voice::legs::timeline;

/// Longest a prompt is waited for on a network that carries media, if that network never
/// says it ended (a node that died while playing): the audio files' longest duration.
const PROMPT_ALLOWANCE_MS: i64 = 15 * 60 * 1000;
/// Time a network that carries media has to deliver a voicemail after its longest duration.
const RECORD_GRACE_MS: i64 = 10_000;

/// What `gather@v2` waits for.
pub(crate) struct Gather {
    pub(crate) max_digits: u32,
    pub(crate) min_digits: u32,
    pub(crate) timeout_secs: u32,
    pub(crate) finish_on_key: Option<String>,
    /// Spoken first: the text and its language.
    pub(crate) prompt: Option<(String, Option<String>)>,
}

/// The tag a prompt of `fiber` is reported with, on a network that carries media.
fn tag(s: &Scope<'_>, fiber: u32) -> Option<PlayTag> {
    s.media.then_some(PlayTag {
        run: s.run.id,
        fiber,
    })
}

/// `say@v2`, `play@v1`: the prompt is played; its fiber goes on once it was.
pub(crate) fn prompt(
    c: &mut dyn Conn,
    s: &mut Scope<'_>,
    k: &Call,
    fiber: u32,
    action: PromptKind<'_>,
) -> Result<(), DbError> {
    let tag = tag(s, fiber);
    match action {
        PromptKind::Say { what, language } => say(c, s, k, what, language, tag)?,
        PromptKind::Play { media } => {
            timeline(c, k.id, "play", &json!({"media": media}), s.now)?;
            let audio_file = media.to_owned();
            s.act(k, CallAction::Play { audio_file, tag });
        }
    }
    if s.media {
        s.waits.push(Pending::Playing {
            fiber,
            deadline: s.now.millis() + PROMPT_ALLOWANCE_MS,
        });
    } else {
        s.done(fiber, Value::Null);
    }
    Ok(())
}

/// What a prompt plays.
pub(crate) enum PromptKind<'a> {
    /// A text spoken.
    Say {
        /// The text.
        what: &'a str,
        /// Its language.
        language: Option<&'a str>,
    },
    /// An audio file.
    Play {
        /// The audio file's sid.
        media: &'a str,
    },
}

/// `gather@v2`: its prompt is spoken, the network collects digits; the run waits for them
/// or the timeout (from the end of the prompt, on a network that carries media).
pub(crate) fn collect(
    c: &mut dyn Conn,
    s: &mut Scope<'_>,
    k: &Call,
    fiber: u32,
    g: Gather,
) -> Result<(), DbError> {
    let prompted = g.prompt.is_some();
    if let Some((what, language)) = &g.prompt {
        let tag = tag(s, fiber);
        say(c, s, k, what, language.as_deref(), tag)?;
    }
    let data = json!({"maxDigits": g.max_digits, "timeout": g.timeout_secs});
    timeline(c, k.id, "gather", &data, s.now)?;
    s.act(
        k,
        CallAction::Collect {
            max_digits: g.max_digits,
            timeout_ms: u64::from(g.timeout_secs) * 1000,
            finish_on_key: g.finish_on_key.clone(),
        },
    );
    let timeout_ms = i64::from(g.timeout_secs) * 1000;
    let waits_for_prompt = prompted && s.media;
    let deadline = s.now.millis()
        + timeout_ms
        + if waits_for_prompt {
            PROMPT_ALLOWANCE_MS
        } else {
            0
        };
    s.waits.push(Pending::Gather {
        fiber,
        max_digits: g.max_digits,
        min_digits: g.min_digits,
        finish_on_key: g.finish_on_key,
        deadline,
        prompt: waits_for_prompt,
        timeout_ms,
    });
    Ok(())
}

/// What `record@v1` asks.
pub(crate) struct Voicemail {
    pub(crate) max_duration_secs: u32,
    pub(crate) finish_on_key: Option<String>,
    /// The language to transcribe it in, when asked.
    pub(crate) transcription: Option<String>,
}

/// `record@v1`: the network records the caller; the run waits for the audio, the longest
/// duration or the hangup.
pub(crate) fn record(
    c: &mut dyn Conn,
    s: &mut Scope<'_>,
    k: &Call,
    fiber: u32,
    v: Voicemail,
) -> Result<(), DbError> {
    let Voicemail {
        max_duration_secs,
        finish_on_key,
        transcription,
    } = v;
    let data = json!({"maxDuration": max_duration_secs});
    timeline(c, k.id, "record", &data, s.now)?;
    s.act(
        k,
        CallAction::Record {
            max_ms: u64::from(max_duration_secs) * 1000,
            finish_on_key,
        },
    );
    let grace = if s.media { RECORD_GRACE_MS } else { 0 };
    s.waits.push(Pending::Record {
        fiber,
        started: s.now.millis(),
        deadline: s.now.millis() + i64::from(max_duration_secs) * 1000 + grace,
        transcription,
    });
    Ok(())
}

/// Speaks a text on the call (`say@v2`, a `gather@v2` prompt).
fn say(
    c: &mut dyn Conn,
    s: &mut Scope<'_>,
    k: &Call,
    what: &str,
    language: Option<&str>,
    tag: Option<PlayTag>,
) -> Result<(), DbError> {
    let data = json!({"what": what, "language": language});
    timeline(c, k.id, "say", &data, s.now)?;
    s.act(
        k,
        CallAction::Say {
            text: what.to_owned(),
            language: language.map(str::to_owned),
            tag,
        },
    );
    Ok(())
}

/// A prompt of `fiber` finished playing: a `say` or `play` goes on, a gather's timeout
/// starts.
pub(crate) fn played(s: &mut Scope<'_>, fiber: u32) {
    let now = s.now.millis();
    if let Some(at) = s
        .waits
        .iter()
        .position(|w| matches!(w, Pending::Playing { fiber: f, .. } if *f == fiber))
    {
        s.waits.remove(at);
        s.done(fiber, Value::Null);
        return;
    }
    for wait in s.waits.iter_mut() {
        if let Pending::Gather {
            fiber: f,
            prompt,
            deadline,
            timeout_ms,
            ..
        } = wait
            && *f == fiber
            && *prompt
        {
            *prompt = false;
            *deadline = now + *timeout_ms;
        }
    }
}
