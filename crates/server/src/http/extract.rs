//! Strict parsing of query strings and JSON bodies: unknown parameters and properties are
//! refused by name, type errors name the property, and nothing is guessed.

use std::collections::BTreeSet;

use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::response::{IntoResponse, Response};
use dialtone_domain::{E164, Timestamp};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};

use crate::error::{AppError, AppResult, Detail, ErrorCode};

/// A JSON body parsed strictly into `T` ([`json_body`]): 400 `invalid_json` when it is not
/// a JSON object, `validation_error` naming unknown or mistyped properties.
pub(crate) struct JsonBody<T>(pub(crate) T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for JsonBody<T> {
    type Rejection = Response;

    async fn from_request(req: Request, state: &S) -> Result<Self, Response> {
        let bytes = Bytes::from_request(req, state)
            .await
            .map_err(IntoResponse::into_response)?;
        json_body(&bytes)
            .map(JsonBody)
            .map_err(IntoResponse::into_response)
    }
}

/// Like [`JsonBody`], but an empty body means `{}` ([`optional_json_body`]).
pub(crate) struct OptionalJsonBody<T>(pub(crate) T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for OptionalJsonBody<T> {
    type Rejection = Response;

    async fn from_request(req: Request, state: &S) -> Result<Self, Response> {
        let bytes = Bytes::from_request(req, state)
            .await
            .map_err(IntoResponse::into_response)?;
        optional_json_body(&bytes)
            .map(OptionalJsonBody)
            .map_err(IntoResponse::into_response)
    }
}

/// A query string parsed strictly into `T` ([`query`]): unknown parameters refused by name.
pub(crate) struct QueryString<T>(pub(crate) T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for QueryString<T> {
    type Rejection = AppError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, AppError> {
        query(parts.uri.query()).map(QueryString)
    }
}

/// Parses a query string into `T`, whose fields name every accepted parameter.
/// A parameter given twice becomes a list, which only list fields accept.
pub(crate) fn query<T: DeserializeOwned>(raw: Option<&str>) -> AppResult<T> {
    let mut map = Map::new();
    for (key, value) in form_urlencoded::parse(raw.unwrap_or_default().as_bytes()) {
        let key = key.into_owned();
        let value = Value::String(value.into_owned());
        match map.get_mut(&key) {
            Some(Value::Array(items)) => items.push(value),
            Some(existing) => {
                let first = existing.take();
                *existing = Value::Array(vec![first, value]);
            }
            None => {
                map.insert(key, value);
            }
        }
    }
    from_value(Value::Object(map), "parameter")
}

/// Parses a JSON body into `T`: 400 `invalid_json` when it is not JSON, 400
/// `validation_error` naming unknown or mistyped properties otherwise.
pub(crate) fn json_body<T: DeserializeOwned>(bytes: &[u8]) -> AppResult<T> {
    let value: Value = serde_json::from_slice(bytes).map_err(|e| {
        AppError::new(
            ErrorCode::InvalidJson,
            format!("the body is not valid JSON: {e}"),
        )
    })?;
    if !value.is_object() {
        return Err(AppError::new(
            ErrorCode::InvalidJson,
            "the body must be a JSON object",
        ));
    }
    from_value(value, "property")
}

/// Like [`json_body`] but an empty body means `{}`.
pub(crate) fn optional_json_body<T: DeserializeOwned>(bytes: &[u8]) -> AppResult<T> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return from_value(Value::Object(Map::new()), "property");
    }
    json_body(bytes)
}

fn from_value<T: DeserializeOwned>(value: Value, what: &str) -> AppResult<T> {
    let mut unknown = BTreeSet::new();
    let mut record = |path: serde_ignored::Path<'_>| {
        // serde_ignored writes `?` for an Option level; clients know no such level.
        let text = path.to_string();
        let clean: Vec<&str> = text.split('.').filter(|s| *s != "?").collect();
        unknown.insert(clean.join("."));
    };
    let ignored = serde_ignored::Deserializer::new(value, &mut record);
    let parsed: Result<T, _> = serde_path_to_error::deserialize(ignored);
    if !unknown.is_empty() {
        return Err(AppError::validation(
            unknown
                .into_iter()
                .map(|p| Detail::new(p, format!("unknown {what}")))
                .collect(),
        ));
    }
    parsed.map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner().to_string();
        // serde reports a missing field at its parent: name the field itself.
        if let Some(field) = inner
            .strip_prefix("missing field `")
            .and_then(|rest| rest.split('`').next())
        {
            let param = if path == "." {
                field.to_owned()
            } else {
                format!("{path}.{field}")
            };
            return AppError::invalid(param, "is required");
        }
        let message = if inner.contains("invalid type: sequence") {
            "must be given once".to_owned()
        } else {
            inner
        };
        AppError::invalid(path, message)
    })
}

/// For list parameters: accepts one value or several.
pub(crate) fn one_or_many<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<Vec<String>>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum OneOrMany {
        One(String),
        Many(Vec<String>),
    }
    Ok(Option::<OneOrMany>::deserialize(d)?.map(|v| match v {
        OneOrMany::One(s) => vec![s],
        OneOrMany::Many(v) => v,
    }))
}

/// Collects every invalid parameter of a request before answering once.
#[derive(Debug, Default)]
pub(crate) struct Checks {
    details: Vec<Detail>,
}

impl Checks {
    /// Records a failure.
    pub(crate) fn fail(&mut self, param: &str, message: impl Into<String>) {
        self.details.push(Detail::new(param, message));
    }

    /// Ok when nothing failed, else 400 `validation_error` with every detail.
    pub(crate) fn finish(self) -> AppResult<()> {
        if self.details.is_empty() {
            Ok(())
        } else {
            Err(AppError::validation(self.details))
        }
    }

    /// A value that must be present.
    pub(crate) fn required<'a>(&mut self, param: &str, value: Option<&'a str>) -> Option<&'a str> {
        if value.is_none() {
            self.fail(param, "is required");
        }
        value
    }

    /// An integer within bounds.
    pub(crate) fn int(
        &mut self,
        param: &str,
        value: Option<&str>,
        min: i64,
        max: i64,
    ) -> Option<i64> {
        let v = value?;
        match v.parse::<i64>() {
            Ok(n) if (min..=max).contains(&n) => Some(n),
            _ => {
                self.fail(param, format!("must be an integer from {min} to {max}"));
                None
            }
        }
    }

    /// One of a fixed set of words.
    pub(crate) fn choice<T: Copy>(
        &mut self,
        param: &str,
        value: Option<&str>,
        choices: &[(&str, T)],
    ) -> Option<T> {
        let v = value?;
        match choices.iter().find(|(name, _)| *name == v) {
            Some((_, t)) => Some(*t),
            None => {
                let names: Vec<&str> = choices.iter().map(|(n, _)| *n).collect();
                self.fail(param, format!("must be one of: {}", names.join(", ")));
                None
            }
        }
    }

    /// An RFC 3339 datetime.
    pub(crate) fn datetime(&mut self, param: &str, value: Option<&str>) -> Option<Timestamp> {
        let v = value?;
        match Timestamp::parse_rfc3339(v) {
            Ok(t) => Some(t),
            Err(e) => {
                self.fail(param, e.to_string());
                None
            }
        }
    }

    /// A boolean written `true` or `false`.
    pub(crate) fn boolean(&mut self, param: &str, value: Option<&str>) -> Option<bool> {
        self.choice(param, value, &[("true", true), ("false", false)])
    }

    /// Text whose length in characters is within bounds.
    pub(crate) fn text<'a>(
        &mut self,
        param: &str,
        value: Option<&'a str>,
        min: usize,
        max: usize,
    ) -> Option<&'a str> {
        let v = value?;
        let n = v.chars().count();
        if (min..=max).contains(&n) {
            Some(v)
        } else {
            self.fail(param, format!("must be {min} to {max} characters long"));
            None
        }
    }

    /// An E.164 phone number valid in its numbering plan.
    pub(crate) fn phone(&mut self, param: &str, value: Option<&str>) -> Option<E164> {
        let v = value?;
        match E164::parse(v) {
            Ok(n) => Some(n),
            Err(e) => {
                self.fail(param, e.to_string());
                None
            }
        }
    }

    /// An absolute http or https URL (webhook endpoints, fetches).
    pub(crate) fn http_url(&mut self, param: &str, value: Option<&str>) -> Option<String> {
        let v = value?;
        match url::Url::parse(v) {
            Ok(u)
                if (u.scheme() == "http" || u.scheme() == "https")
                    && u.host().is_some()
                    && v.len() <= 2048 =>
            {
                Some(v.to_owned())
            }
            _ => {
                self.fail(param, "must be an absolute http or https URL");
                None
            }
        }
    }

    /// A sid (8 characters of `[0-9a-z]`).
    pub(crate) fn sid(&mut self, param: &str, value: Option<&str>) -> Option<dialtone_domain::Sid> {
        let v = value?;
        let sid = dialtone_domain::Sid::parse(v).filter(|s| s.as_str() == v);
        if sid.is_none() {
            self.fail(param, "must be a sid: 8 characters of 0-9 and a-z");
        }
        sid
    }
}

/// For properties where absent and `null` differ (PATCH): absent is `None`, `null` is
/// `Some(None)`. Use with `#[serde(default, deserialize_with = "nullable")]`.
pub(crate) fn nullable<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> Result<Option<Option<T>>, D::Error> {
    Option::<T>::deserialize(d).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Q {
        name: Option<String>,
        #[serde(default, deserialize_with = "one_or_many")]
        sid: Option<Vec<String>>,
    }

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Body {
        name: String,
        options: Option<Opts>,
    }

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Opts {
        algo: Option<String>,
    }

    #[test]
    fn unknown_query_parameters_are_named() {
        let e = query::<Q>(Some("name=a&bogus=1&zz=2")).unwrap_err();
        assert_eq!(e.code, ErrorCode::ValidationError);
        let params: Vec<_> = e.details.iter().map(|d| d.param.as_str()).collect();
        assert_eq!(params, ["bogus", "zz"]);
    }

    #[test]
    fn repeated_parameters() {
        let q = query::<Q>(Some("sid=a&sid=b")).unwrap();
        assert_eq!(q.sid.unwrap(), ["a", "b"]);
        let q = query::<Q>(Some("sid=a")).unwrap();
        assert_eq!(q.sid.unwrap(), ["a"]);
        let e = query::<Q>(Some("name=a&name=b")).unwrap_err();
        assert_eq!(e.details[0].param, "name");
        assert_eq!(e.details[0].message, "must be given once");
    }

    #[test]
    fn bodies_name_unknown_missing_and_mistyped_properties() {
        assert_eq!(
            json_body::<Body>(b"{").unwrap_err().code,
            ErrorCode::InvalidJson
        );
        assert_eq!(
            json_body::<Body>(b"[1]").unwrap_err().code,
            ErrorCode::InvalidJson
        );
        let e = json_body::<Body>(br#"{"name":"x","options":{"algo":"a","extra":1}}"#).unwrap_err();
        assert_eq!(e.details[0].param, "options.extra");
        let e = json_body::<Body>(br#"{}"#).unwrap_err();
        assert_eq!(e.details[0].param, "name");
        assert_eq!(e.details[0].message, "is required");
        let e = json_body::<Body>(br#"{"name":5}"#).unwrap_err();
        assert_eq!(e.details[0].param, "name");
    }
}
