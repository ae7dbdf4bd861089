//! From evaluated parameters to a typed [`CommandKind`], with defaults and lenient coercions
//! (numeric strings for numbers, a single string for a list).

use serde_json::{Map, Value};

use crate::catalog::Kind;
use crate::protocol::{CommandKind, DialTarget};

/// Default `gather@v2` timeout, seconds.
pub(crate) const GATHER_TIMEOUT_SECS: u32 = 10;
/// Default ringing time of a dial target, seconds.
pub(crate) const DIAL_TIMEOUT_SECS: u32 = 30;
/// Default `fetch` timeout, seconds.
pub(crate) const FETCH_TIMEOUT_SECS: f64 = 10.0;

/// The language of a `transcription: {language}` parameter (the scenario's language, else
/// `en-US`, when it gives none); None when no transcription is asked for.
fn transcription(
    params: &Map<String, Value>,
    language: Option<&str>,
) -> Result<Option<String>, String> {
    match params.get("transcription") {
        None | Some(Value::Null) | Some(Value::Bool(false)) => Ok(None),
        Some(Value::Bool(true)) => Ok(Some(language.unwrap_or("en-US").to_owned())),
        Some(Value::Object(o)) => match o.get("language") {
            None | Some(Value::Null) => Ok(Some(language.unwrap_or("en-US").to_owned())),
            Some(Value::String(l)) if !l.trim().is_empty() && l.len() <= 35 => {
                Ok(Some(l.trim().to_owned()))
            }
            Some(_) => Err("transcription.language must be a language tag such as en-US".into()),
        },
        Some(_) => Err("transcription must be an object such as {language: en-US}".into()),
    }
}

/// Builds the command of a non-pure action.
pub(crate) fn build(
    kind: Kind,
    params: &Map<String, Value>,
    language: Option<&str>,
) -> Result<CommandKind, String> {
    let p = Params(params);
    Ok(match kind {
        Kind::Answer => CommandKind::Answer,
        Kind::Ringing => CommandKind::Ringing,
        Kind::Hangup => CommandKind::Hangup,
        Kind::Bridge => CommandKind::Bridge,
        Kind::StartRecording => CommandKind::StartRecording {
            transcription: transcription(params, language)?,
        },
        Kind::Say => CommandKind::Say {
            what: p.required_str("what")?,
            language: p.str("language")?.or(language.map(str::to_string)),
        },
        Kind::Play => CommandKind::Play {
            media: p.required_str("media")?,
        },
        Kind::Gather => {
            let prompt = match params.get("prompt") {
                None | Some(Value::Null) => None,
                Some(Value::Object(o)) => {
                    let pp = Params(o);
                    Some((
                        pp.required_str("what")
                            .map_err(|e| format!("prompt: {e}"))?,
                        pp.str("language")?.or(language.map(str::to_string)),
                    ))
                }
                Some(Value::String(s)) => Some((s.clone(), language.map(str::to_string))),
                Some(other) => {
                    return Err(format!("parameter `prompt` must be a map, got {other}"));
                }
            };
            CommandKind::Gather {
                max_digits: p.required_u32("maxDigits")?,
                min_digits: p.u32("minDigits")?.unwrap_or(1),
                timeout_secs: p.u32("timeout")?.unwrap_or(GATHER_TIMEOUT_SECS),
                finish_on_key: p.str("finishOnKey")?,
                prompt,
            }
        }
        Kind::Record => CommandKind::Record {
            max_duration_secs: p.required_u32("maxDuration")?,
            finish_on_key: p.str("finishOnKey")?,
            transcription: transcription(params, language)?,
        },
        Kind::Dial => CommandKind::Dial {
            targets: targets(params.get("targets"))?,
            answer_on_branch: p.str("answerOnBranch")?.filter(|s| !s.is_empty()),
            from: p.str("from")?.filter(|s| !s.is_empty()),
        },
        Kind::Sms => CommandKind::SendSms {
            to: p.str_list("to")?,
            body: p.required_str("body")?,
            from: p.str("from")?.filter(|s| !s.is_empty()),
        },
        Kind::Fetch(version) => {
            let headers = match params.get("headers") {
                None | Some(Value::Null) => Vec::new(),
                Some(Value::Object(o)) => o
                    .iter()
                    .map(|(k, v)| {
                        Ok((
                            k.clone(),
                            text(v).ok_or_else(|| format!("header `{k}` must be a string"))?,
                        ))
                    })
                    .collect::<Result<_, String>>()?,
                Some(other) => {
                    return Err(format!("parameter `headers` must be a map, got {other}"));
                }
            };
            let body = match params.get("body") {
                None | Some(Value::Null) => None,
                Some(Value::String(s)) => Some(s.clone()),
                Some(other) => Some(other.to_string()),
            };
            let timeout = p.f64("timeout")?.unwrap_or(FETCH_TIMEOUT_SECS);
            CommandKind::Fetch {
                url: p.required_str("url")?,
                method: p
                    .str("method")?
                    .map_or_else(|| "GET".to_string(), |m| m.to_ascii_uppercase()),
                headers,
                body,
                timeout_ms: (timeout * 1000.0).round() as u64,
                version,
            }
        }
        Kind::Wait => CommandKind::Wait {
            seconds: p.required_f64("seconds")?,
        },
        Kind::Log | Kind::Javascript => {
            return Err("internal: pure actions have no command".into());
        }
    })
}

/// The text of a scalar value (objects and lists as JSON).
pub(crate) fn text(v: &Value) -> Option<String> {
    match v {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) => Some(n.to_string()),
        other => Some(other.to_string()),
    }
}

struct Params<'a>(&'a Map<String, Value>);

impl Params<'_> {
    fn str(&self, name: &str) -> Result<Option<String>, String> {
        Ok(self.0.get(name).and_then(text))
    }

    fn required_str(&self, name: &str) -> Result<String, String> {
        self.str(name)?.ok_or_else(|| {
            format!("parameter `{name}` is required (its value is null or undefined)")
        })
    }

    fn f64(&self, name: &str) -> Result<Option<f64>, String> {
        match self.0.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Number(n)) => n
                .as_f64()
                .map(Some)
                .ok_or_else(|| format!("parameter `{name}` must be a number")),
            Some(Value::String(s)) => s
                .trim()
                .parse::<f64>()
                .ok()
                .filter(|f| f.is_finite())
                .map(Some)
                .ok_or_else(|| format!("parameter `{name}` must be a number, got {s:?}")),
            Some(other) => Err(format!("parameter `{name}` must be a number, got {other}")),
        }
    }

    fn required_f64(&self, name: &str) -> Result<f64, String> {
        let v = self.f64(name)?.ok_or_else(|| {
            format!("parameter `{name}` is required (its value is null or undefined)")
        })?;
        if v < 0.0 {
            return Err(format!("parameter `{name}` must not be negative"));
        }
        Ok(v)
    }

    fn u32(&self, name: &str) -> Result<Option<u32>, String> {
        match self.f64(name)? {
            None => Ok(None),
            Some(f) if f >= 0.0 && f.fract() == 0.0 && f <= f64::from(u32::MAX) => {
                Ok(Some(f as u32))
            }
            Some(f) => Err(format!(
                "parameter `{name}` must be a whole number, got {f}"
            )),
        }
    }

    fn required_u32(&self, name: &str) -> Result<u32, String> {
        self.u32(name)?.ok_or_else(|| {
            format!("parameter `{name}` is required (its value is null or undefined)")
        })
    }

    fn str_list(&self, name: &str) -> Result<Vec<String>, String> {
        match self.0.get(name) {
            None | Some(Value::Null) => Err(format!("parameter `{name}` is required")),
            Some(Value::Array(items)) => items
                .iter()
                .map(|v| text(v).ok_or_else(|| format!("parameter `{name}` has an empty item")))
                .collect(),
            Some(v) => Ok(vec![text(v).unwrap_or_default()]),
        }
    }
}

fn targets(value: Option<&Value>) -> Result<Vec<DialTarget>, String> {
    let items: Vec<&Value> = match value {
        None | Some(Value::Null) => return Err("parameter `targets` is required".into()),
        Some(Value::Array(items)) => items.iter().collect(),
        Some(v) => vec![v],
    };
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.into_iter().enumerate() {
        let target = match item {
            Value::Object(o) => {
                let p = Params(o);
                DialTarget {
                    number: p
                        .required_str("number")
                        .map_err(|e| format!("target {}: {e}", i + 1))?,
                    timeout_secs: p
                        .u32("timeout")
                        .map_err(|e| format!("target {}: {e}", i + 1))?
                        .unwrap_or(DIAL_TIMEOUT_SECS),
                }
            }
            Value::String(s) => DialTarget {
                number: s.clone(),
                timeout_secs: DIAL_TIMEOUT_SECS,
            },
            other => return Err(format!("target {} must be a map, got {other}", i + 1)),
        };
        out.push(target);
    }
    if out.is_empty() {
        return Err("parameter `targets` must name at least one target".into());
    }
    Ok(out)
}
