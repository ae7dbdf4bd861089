//! `media/library.*`: audio files through the earlier interface, for the operations v2.0
//! has: `create [name]` (-> id), `get [id]`, `get_list [null]`, `set_name [id, name]`,
//! `set_content [id, text, base64]` (the text is ignored: no text-to-speech), `delete [id]`,
//! `get_phone_id [id, country]`, `search [filters, options]`. An id is the numeric `id` or
//! the `hash` of the object.

use base64::Engine;
use dialtone_domain::Sid;
use dialtone_store::audio_files::{self, AudioFile, SOURCE_UPLOAD};
use serde_json::{Value, json};

use super::call::{Call, int_option};
use super::error::{RpcError, codes};
use crate::media::{self, emit_status, phone_recording};

/// What the `url` of the Media.Library objects of one answer needs.
struct Shown {
    public_url: String,
    secret: String,
    now: dialtone_domain::Timestamp,
}

impl Shown {
    async fn of(call: &Call<'_>) -> Result<Self, RpcError> {
        let secret = crate::tasks::export::secret(call.state)
            .await
            .map_err(|e| RpcError::new(codes::INTERNAL, e.to_string()))?;
        Ok(Self {
            public_url: call.state.config.public_url(),
            secret,
            now: call.state.clock.now(),
        })
    }

    /// The Media.Library object (see [`media::legacy`]).
    fn object(&self, file: &AudioFile) -> Value {
        media::legacy(
            file,
            media::Links {
                public_url: &self.public_url,
                secret: &self.secret,
                now: self.now,
            },
        )
    }
}

fn not_found() -> RpcError {
    RpcError::new(codes::NOT_FOUND, "media not found")
}

/// The account's file named by param `i`: its numeric `id` (a number or a string of
/// digits) or its `hash`. An 8-digit string can be either: the hash is tried first.
async fn file(call: &Call<'_>, i: usize) -> Result<AudioFile, RpcError> {
    let account = call.caller.account.id;
    let (hash, id) = match call.param(i) {
        Value::Null => {
            return Err(RpcError::new(
                codes::MISSING_PROPERTY,
                format!("param {i} (id) is required"),
            ));
        }
        v @ (Value::Number(_) | Value::String(_)) => {
            (v.as_str().and_then(Sid::parse), super::call::integer(v))
        }
        _ => {
            return Err(RpcError::invalid_param(
                i,
                "id must be an integer or a hash",
            ));
        }
    };
    if hash.is_none() && id.is_none() {
        return Err(not_found());
    }
    call.state
        .store
        .read(move |c| {
            if let Some(sid) = &hash
                && let Some(f) = audio_files::get(c, account, sid)?
            {
                return Ok::<_, dialtone_store::DbError>(Some(f));
            }
            match id {
                Some(id) => Ok(audio_files::by_id(c, id)?.filter(|f| f.account_id == account)),
                None => Ok(None),
            }
        })
        .await?
        .ok_or_else(not_found)
}

fn name(call: &Call<'_>, i: usize) -> Result<String, RpcError> {
    let name = call.string(i, "name")?;
    if !(1..=64).contains(&name.chars().count()) {
        return Err(RpcError::invalid_param(
            i,
            "name must be 1 to 64 characters long",
        ));
    }
    Ok(name)
}

/// `media/library.create [name]` -> the new media's id.
pub(super) async fn create(call: &Call<'_>) -> Result<Value, RpcError> {
    let name = name(call, 0)?;
    let (account, now) = (call.caller.account.id, call.state.clock.now());
    let config = call.state.config.clone();
    let file = call
        .state
        .store
        .write(move |c| {
            crate::quotas::check(c, &config, crate::quotas::Quota::AudioFiles, account)?;
            let file = audio_files::create(c, account, &name, now)?;
            emit_status(c, &config.public_url(), &file, now)?;
            Ok::<_, crate::error::AppError>(file)
        })
        .await?;
    Ok(json!(file.id))
}

/// `media/library.get [id]` -> the Media.Library object.
pub(super) async fn get(call: &Call<'_>) -> Result<Value, RpcError> {
    let file = file(call, 0).await?;
    Ok(Shown::of(call).await?.object(&file))
}

/// `media/library.get_list [null]` -> every Media.Library object of the account, newest
/// first (at most 1000).
pub(super) async fn get_list(call: &Call<'_>) -> Result<Value, RpcError> {
    let account = call.caller.account.id;
    let list = call
        .state
        .store
        .read(move |c| audio_files::list(c, account, 1000))
        .await?;
    let shown = Shown::of(call).await?;
    Ok(list.iter().map(|f| shown.object(f)).collect())
}

fn text_option(v: &Value, key: &str, index: usize) -> Result<Option<String>, RpcError> {
    match v.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(RpcError::invalid_param(
            index,
            format!("{key} must be a string"),
        )),
    }
}

/// `media/library.search [filters, options]` -> `{hits, total, offset, has_more}`, newest
/// first. Filters: `name` (part, 1 to 64 characters), `status` (e.g. `READY`), `source`
/// (`UPLOAD` or `PHONE`); options: `offset`, `limit` (1 to 100, default 10).
pub(super) async fn search(call: &Call<'_>) -> Result<Value, RpcError> {
    let (filters, options) = (call.param(0).clone(), call.param(1).clone());
    let name = text_option(&filters, "name", 0)?;
    if name
        .as_ref()
        .is_some_and(|n| !(1..=64).contains(&n.chars().count()))
    {
        return Err(RpcError::invalid_param(
            0,
            "name must be 1 to 64 characters long",
        ));
    }
    let word = |key: &str, allowed: &[&str]| -> Result<Option<String>, RpcError> {
        let Some(v) = text_option(&filters, key, 0)? else {
            return Ok(None);
        };
        let v = v.to_ascii_lowercase().replace('_', "-");
        if allowed.contains(&v.as_str()) {
            Ok(Some(v))
        } else {
            Err(RpcError::invalid_param(
                0,
                format!("{key} is not a known value"),
            ))
        }
    };
    let filter = audio_files::Filter {
        name,
        status: word("status", &audio_files::STATUSES)?,
        source: word("source", &audio_files::SOURCES)?,
    };
    let offset = int_option(&options, "offset", 0, 1_000_000_000)?;
    let limit = int_option(&options, "limit", 10, 100)?.max(1);
    let paging = dialtone_store::search::Paging {
        sort_column: "created",
        descending: true,
        offset,
        limit,
    };
    let account = call.caller.account.id;
    let (total, hits) = call
        .state
        .store
        .read(move |c| audio_files::search(c, account, &filter, &paging))
        .await?;
    let shown = Shown::of(call).await?;
    Ok(json!({
        "hits": hits.iter().map(|f| shown.object(f)).collect::<Vec<_>>(),
        "total": total,
        "offset": offset,
        "has_more": offset + (hits.len() as i64) < total,
    }))
}

/// `media/library.set_name [id, name]` -> true.
pub(super) async fn set_name(call: &Call<'_>) -> Result<Value, RpcError> {
    let f = file(call, 0).await?;
    let name = name(call, 1)?;
    let (account, now) = (call.caller.account.id, call.state.clock.now());
    call.state
        .store
        .write(move |c| audio_files::rename(c, account, &f.sid, &name, now))
        .await?
        .ok_or_else(not_found)?;
    Ok(Value::Bool(true))
}

/// `media/library.delete [id]` -> true.
pub(super) async fn delete(call: &Call<'_>) -> Result<Value, RpcError> {
    let f = file(call, 0).await?;
    let account = call.caller.account.id;
    call.state
        .store
        .write(move |c| audio_files::delete(c, account, &f.sid))
        .await?;
    Ok(Value::Bool(true))
}

/// `media/library.set_content [id, text, base64]` -> true: the decoded audio replaces the
/// content and is converted like an upload (its type is sniffed).
pub(super) async fn set_content(call: &Call<'_>) -> Result<Value, RpcError> {
    let f = file(call, 0).await?;
    let encoded = call.string(2, "base64")?;
    let max_encoded = call.state.config.audio_max_bytes / 3 * 4 + 8;
    if encoded.len() > max_encoded {
        return Err(media::too_large(call.state).into());
    }
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .map_err(|_| RpcError::invalid_param(2, "base64 is not valid base64"))?;
    if bytes.len() > call.state.config.audio_max_bytes {
        return Err(media::too_large(call.state).into());
    }
    if bytes.is_empty() {
        return Err(RpcError::invalid_param(2, "base64 holds no audio"));
    }
    let declared = dialtone_media::sniff(&bytes)
        .ok_or_else(|| RpcError::from(media::unsupported("unknown")))?;
    media::replace_content(
        call.state,
        call.caller.account.id,
        f.sid,
        SOURCE_UPLOAD,
        declared.content_type(),
        bytes,
    )
    .await?
    .ok_or_else(not_found)?;
    Ok(Value::Bool(true))
}

/// `media/library.get_phone_id [id, country]` -> `{phone_number, code, expires}`.
pub(super) async fn get_phone_id(call: &Call<'_>) -> Result<Value, RpcError> {
    let f = file(call, 0).await?;
    let country = call.string(1, "country")?.trim().to_ascii_uppercase();
    if !dialtone_domain::country::is_code(&country) {
        return Err(RpcError::invalid_param(
            1,
            "country must be an ISO 3166 alpha-2 code",
        ));
    }
    let id = phone_recording::issue(call.state, call.caller.account.id, f.sid, country)
        .await?
        .ok_or_else(not_found)?;
    Ok(json!({
        "phone_number": id.number.as_str(),
        "code": id.code,
        "expires": id.expires.to_legacy(),
    }))
}

/// `media/tts.get_voice_list []` -> the voices: `{voice, language, gender, engine}` each.
pub(super) async fn tts_voices(call: &Call<'_>) -> Result<Value, RpcError> {
    let voices: Vec<Value> = call
        .state
        .speech
        .voices()
        .await
        .into_iter()
        .map(|v| {
            serde_json::json!({
                "voice": v.id,
                "language": v.language,
                "gender": v.gender.as_str(),
                "engine": v.engine.as_str(),
            })
        })
        .collect();
    Ok(Value::Array(voices))
}

/// `media/tts.set_content [id, text, voice, options|null]` -> true: the text, spoken by the
/// voice, becomes the content (`READY` once spoken, source `TTS`). An unknown voice is
/// refused with the voices there are.
pub(super) async fn tts_set_content(call: &Call<'_>) -> Result<Value, RpcError> {
    let f = file(call, 0).await?;
    let text = call.string(1, "text")?;
    if !crate::speech::speakable(&text) {
        return Err(RpcError::invalid_param(
            1,
            "text must have 1 to 4000 characters, not only spaces",
        ));
    }
    let name = call.string(2, "voice")?;
    let voice = call
        .state
        .speech
        .voice(&name)
        .await
        .map_err(|e| RpcError::invalid_param(2, e.to_string()))?;
    media::set_tts(call.state, call.caller.account.id, f.sid, text, voice.id)
        .await?
        .ok_or_else(not_found)?;
    Ok(Value::Bool(true))
}
