//! `${{ expression }}` templates inside parameter strings.
//!
//! A string that is exactly one `${{ }}` (surrounding blanks aside) yields the JavaScript value
//! with its type; any other string with expressions is interpolated into a string. The end of
//! an expression is the first `}}` outside JavaScript string literals and outside braces opened
//! by the expression itself, so `${{ JSON.stringify({a: {b: 1}}) }}` works.

use serde_json::Value;

/// A parameter value, with its expressions located once at parse time.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Template {
    /// No expression inside: the value as is.
    Literal(Value),
    /// A string that is exactly one expression: its value keeps its JavaScript type.
    Expr(String),
    /// Text with expressions: the result is a string.
    Interp(Vec<Part>),
    /// A list with at least one expression inside.
    Seq(Vec<Template>),
    /// A map with at least one expression inside.
    Map(Vec<(String, Template)>),
}

/// A piece of an interpolated string.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Part {
    Text(String),
    Expr(String),
}

/// Splits `text` into text and expressions; `Err` names an unterminated `${{`.
pub(crate) fn split(text: &str) -> Result<Vec<Part>, String> {
    let mut parts = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("${{") {
        if start > 0 {
            parts.push(Part::Text(rest[..start].to_string()));
        }
        let body = &rest[start + 3..];
        let end = expression_end(body).ok_or_else(|| "`${{` without a closing `}}`".to_string())?;
        let expr = body[..end].trim();
        if expr.is_empty() {
            return Err("empty `${{ }}` expression".into());
        }
        parts.push(Part::Expr(expr.to_string()));
        rest = &body[end + 2..];
    }
    if !rest.is_empty() {
        parts.push(Part::Text(rest.to_string()));
    }
    Ok(parts)
}

/// Builds the template of a string.
pub(crate) fn of_string(text: &str) -> Result<Template, String> {
    if !text.contains("${{") {
        return Ok(Template::Literal(Value::String(text.to_string())));
    }
    let parts = split(text)?;
    let only_expr: Vec<&Part> = parts
        .iter()
        .filter(|p| !matches!(p, Part::Text(t) if t.trim().is_empty()))
        .collect();
    if let [Part::Expr(e)] = only_expr.as_slice() {
        return Ok(Template::Expr(e.clone()));
    }
    Ok(Template::Interp(parts))
}

/// The byte offset of the closing `}}` of an expression body.
fn expression_end(body: &str) -> Option<usize> {
    let bytes = body.as_bytes();
    let mut depth = 0usize;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            q @ (b'\'' | b'"' | b'`') => {
                i += 1;
                while i < bytes.len() && bytes[i] != q {
                    if bytes[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
            }
            b'{' => depth += 1,
            b'}' if depth > 0 => depth -= 1,
            b'}' if bytes.get(i + 1) == Some(&b'}') => return Some(i),
            _ => {}
        }
        i += 1;
    }
    None
}

impl Template {
    /// Every expression source of the template, in order.
    pub(crate) fn expressions(&self) -> Vec<&str> {
        let mut out = Vec::new();
        self.collect(&mut out);
        out
    }

    fn collect<'a>(&'a self, out: &mut Vec<&'a str>) {
        match self {
            Template::Literal(_) => {}
            Template::Expr(e) => out.push(e),
            Template::Interp(parts) => out.extend(parts.iter().filter_map(|p| match p {
                Part::Expr(e) => Some(e.as_str()),
                Part::Text(_) => None,
            })),
            Template::Seq(items) => items.iter().for_each(|t| t.collect(out)),
            Template::Map(pairs) => pairs.iter().for_each(|(_, t)| t.collect(out)),
        }
    }

    /// Collapses a list of templates: a literal list when none has an expression.
    pub(crate) fn seq(items: Vec<Template>) -> Template {
        if items.iter().all(|t| matches!(t, Template::Literal(_))) {
            Template::Literal(Value::Array(
                items
                    .into_iter()
                    .map(|t| match t {
                        Template::Literal(v) => v,
                        _ => Value::Null,
                    })
                    .collect(),
            ))
        } else {
            Template::Seq(items)
        }
    }

    /// Collapses a map of templates: a literal object when none has an expression.
    pub(crate) fn map(pairs: Vec<(String, Template)>) -> Template {
        if pairs.iter().all(|(_, t)| matches!(t, Template::Literal(_))) {
            Template::Literal(Value::Object(
                pairs
                    .into_iter()
                    .map(|(k, t)| match t {
                        Template::Literal(v) => (k, v),
                        _ => (k, Value::Null),
                    })
                    .collect(),
            ))
        } else {
            Template::Map(pairs)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_single_expression_keeps_its_type() {
        assert_eq!(
            of_string("${{ $n + 1 }}"),
            Ok(Template::Expr("$n + 1".into()))
        );
        assert_eq!(of_string("  ${{ x }}\n"), Ok(Template::Expr("x".into())));
    }

    #[test]
    fn text_with_expressions_interpolates() {
        assert_eq!(
            of_string("Hello ${{ call.fromNumber }}!"),
            Ok(Template::Interp(vec![
                Part::Text("Hello ".into()),
                Part::Expr("call.fromNumber".into()),
                Part::Text("!".into())
            ]))
        );
    }

    #[test]
    fn braces_and_strings_inside_expressions() {
        assert_eq!(
            split("${{ JSON.stringify({a: {b: '}}'}}) }}"),
            Ok(vec![Part::Expr("JSON.stringify({a: {b: '}}'}})".into())])
        );
    }

    #[test]
    fn unterminated_and_empty_expressions_fail() {
        assert!(split("${{ x ").is_err());
        assert!(split("${{ }}").is_err());
    }

    #[test]
    fn plain_strings_are_literals() {
        assert_eq!(
            of_string("no expr { here }"),
            Ok(Template::Literal(Value::String("no expr { here }".into())))
        );
    }
}
