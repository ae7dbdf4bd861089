//! A YAML document tree whose every node knows its 1-based line and column.
//!
//! Built on the event parser of `yaml-rust2`; plain scalars are resolved with the YAML 1.2
//! core schema (null, booleans, integers, floats, strings) and keep their source text, so a
//! parameter that expects a string can take `+15551234567` written without quotes verbatim.

use std::collections::HashMap;

use yaml_rust2::parser::{Event, MarkedEventReceiver, Parser};
use yaml_rust2::scanner::{Marker, TScalarStyle};

use crate::error::ScenarioError;

/// A node of the document with its position.
#[derive(Debug, Clone)]
pub(crate) struct Node {
    pub line: usize,
    pub column: usize,
    pub value: NodeValue,
}

/// The value of a node.
#[derive(Debug, Clone)]
pub(crate) enum NodeValue {
    Scalar(Scalar),
    Seq(Vec<Node>),
    Map(Vec<(Node, Node)>),
}

/// A scalar: its source text and its resolved kind.
#[derive(Debug, Clone)]
pub(crate) struct Scalar {
    pub text: String,
    pub kind: ScalarKind,
}

/// The resolved type of a scalar.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ScalarKind {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str,
}

impl Node {
    /// An error positioned at this node.
    pub(crate) fn error(&self, message: impl Into<String>) -> ScenarioError {
        ScenarioError::new(self.line, self.column, message)
    }

    /// The string of a scalar node, whatever its resolved kind (`None` for null and containers).
    pub(crate) fn scalar_text(&self) -> Option<&str> {
        match &self.value {
            NodeValue::Scalar(s) if s.kind != ScalarKind::Null => Some(&s.text),
            _ => None,
        }
    }

    /// The string of a node that is a string scalar (quoted, or plain that resolves to a string).
    pub(crate) fn as_str(&self) -> Option<&str> {
        match &self.value {
            NodeValue::Scalar(Scalar {
                text,
                kind: ScalarKind::Str,
            }) => Some(text),
            _ => None,
        }
    }

    /// Whether the node is null (`~`, `null` or empty).
    pub(crate) fn is_null(&self) -> bool {
        matches!(
            &self.value,
            NodeValue::Scalar(Scalar {
                kind: ScalarKind::Null,
                ..
            })
        )
    }

    /// A short name of the node's type for messages.
    pub(crate) fn type_name(&self) -> &'static str {
        match &self.value {
            NodeValue::Scalar(s) => match s.kind {
                ScalarKind::Null => "null",
                ScalarKind::Bool(_) => "a boolean",
                ScalarKind::Int(_) => "an integer",
                ScalarKind::Float(_) => "a number",
                ScalarKind::Str => "a string",
            },
            NodeValue::Seq(_) => "a list",
            NodeValue::Map(_) => "a map",
        }
    }

    /// The node as JSON (keys of maps by their text).
    pub(crate) fn to_json(&self) -> serde_json::Value {
        use serde_json::Value;
        match &self.value {
            NodeValue::Scalar(s) => match s.kind {
                ScalarKind::Null => Value::Null,
                ScalarKind::Bool(b) => Value::Bool(b),
                ScalarKind::Int(i) => Value::from(i),
                ScalarKind::Float(f) => serde_json::Number::from_f64(f)
                    .map(Value::Number)
                    .unwrap_or(Value::Null),
                ScalarKind::Str => Value::String(s.text.clone()),
            },
            NodeValue::Seq(items) => Value::Array(items.iter().map(Node::to_json).collect()),
            NodeValue::Map(pairs) => Value::Object(
                pairs
                    .iter()
                    .map(|(k, v)| (key_text(k), v.to_json()))
                    .collect(),
            ),
        }
    }
}

/// The text of a map key (null keys read as an empty string).
pub(crate) fn key_text(key: &Node) -> String {
    match &key.value {
        NodeValue::Scalar(s) => s.text.clone(),
        _ => String::new(),
    }
}

/// Parses the first document of `source` into a positioned tree.
pub(crate) fn load(source: &str) -> Result<Node, ScenarioError> {
    let mut builder = Builder::default();
    let mut parser = Parser::new_from_str(source);
    parser.load(&mut builder, false).map_err(|e| {
        let m = e.marker();
        ScenarioError::new(m.line(), m.col() + 1, format!("YAML syntax: {}", e.info()))
    })?;
    if let Some(err) = builder.error {
        return Err(err);
    }
    builder
        .root
        .ok_or_else(|| ScenarioError::new(1, 1, "the scenario is empty"))
}

enum Open {
    Seq(Node, usize, Vec<Node>),
    Map(Node, usize, Vec<(Node, Node)>, Option<Node>),
}

/// Most nodes a document may expand to (aliases included): guards against alias bombs.
const MAX_NODES: usize = 200_000;
/// Most bytes a document may expand to (aliases included; each node counts its text and 16
/// bytes more): a few aliases of a long string would otherwise multiply an 8 KB script into
/// gigabytes with few nodes.
const MAX_BYTES: usize = 1024 * 1024;
/// What one node counts besides its text.
const NODE_BYTES: usize = 16;
/// Deepest nesting of lists and maps.
const MAX_DEPTH: usize = 64;

#[derive(Default)]
struct Builder {
    stack: Vec<Open>,
    /// Anchored nodes with their size (nodes, bytes).
    anchors: HashMap<usize, (Node, Size)>,
    nodes: usize,
    bytes: usize,
    root: Option<Node>,
    error: Option<ScenarioError>,
}

/// How much a tree expands to.
#[derive(Debug, Clone, Copy, Default)]
struct Size {
    nodes: usize,
    bytes: usize,
}

impl Builder {
    fn fail(&mut self, line: usize, column: usize, message: &str) {
        if self.error.is_none() {
            self.error = Some(ScenarioError::new(line, column, message));
        }
    }

    fn push_node(&mut self, node: Node, anchor: usize) {
        if anchor > 0 {
            let size = measure(&node);
            self.anchors.insert(anchor, (node.clone(), size));
        }
        match self.stack.last_mut() {
            Some(Open::Seq(_, _, items)) => items.push(node),
            Some(Open::Map(_, _, pairs, key)) => match key.take() {
                Some(k) => {
                    let text = key_text(&k);
                    if self.error.is_none()
                        && matches!(k.value, NodeValue::Scalar(_))
                        && pairs.iter().any(|(existing, _)| key_text(existing) == text)
                    {
                        self.error = Some(k.error(format!("duplicate key `{text}`")));
                    }
                    pairs.push((k, node));
                }
                None => *key = Some(node),
            },
            None => {
                if self.root.is_none() {
                    self.root = Some(node);
                }
            }
        }
    }
}

impl MarkedEventReceiver for Builder {
    fn on_event(&mut self, ev: Event, mark: Marker) {
        let (line, column) = (mark.line(), mark.col() + 1);
        match ev {
            Event::Scalar(..) | Event::SequenceStart(..) | Event::MappingStart(..)
                if self.error.is_some() => {}
            Event::Scalar(text, style, anchor, tag) => {
                self.nodes += 1;
                self.bytes += text.len() + NODE_BYTES;
                if self.nodes > MAX_NODES || self.bytes > MAX_BYTES {
                    self.fail(line, column, "the document is too large");
                    return;
                }
                let kind = resolve(&text, style, tag.as_ref().map(|t| t.suffix.as_str()));
                let node = Node {
                    line,
                    column,
                    value: NodeValue::Scalar(Scalar { text, kind }),
                };
                self.push_node(node, anchor);
            }
            Event::SequenceStart(anchor, _) => {
                if self.stack.len() >= MAX_DEPTH {
                    self.fail(line, column, "lists and maps are nested too deeply");
                }
                let shell = Node {
                    line,
                    column,
                    value: NodeValue::Seq(Vec::new()),
                };
                self.stack.push(Open::Seq(shell, anchor, Vec::new()));
            }
            Event::MappingStart(anchor, _) => {
                if self.stack.len() >= MAX_DEPTH {
                    self.fail(line, column, "lists and maps are nested too deeply");
                }
                let shell = Node {
                    line,
                    column,
                    value: NodeValue::Map(Vec::new()),
                };
                self.stack.push(Open::Map(shell, anchor, Vec::new(), None));
            }
            Event::SequenceEnd => {
                if let Some(Open::Seq(mut shell, anchor, items)) = self.stack.pop() {
                    shell.value = NodeValue::Seq(items);
                    self.push_node(shell, anchor);
                }
            }
            Event::MappingEnd => {
                if let Some(Open::Map(mut shell, anchor, pairs, _)) = self.stack.pop() {
                    // A block mapping is reported after its first key: point at that key.
                    if let Some((first, _)) = pairs.first()
                        && (first.line, first.column) < (shell.line, shell.column)
                    {
                        shell.line = first.line;
                        shell.column = first.column;
                    }
                    shell.value = NodeValue::Map(pairs);
                    self.push_node(shell, anchor);
                }
            }
            Event::Alias(id) => {
                // Measured before anything is copied.
                let size = self.anchors.get(&id).map(|(_, size)| *size);
                let node = match size {
                    Some(size) => {
                        self.nodes = self.nodes.saturating_add(size.nodes);
                        self.bytes = self.bytes.saturating_add(size.bytes);
                        if self.nodes > MAX_NODES || self.bytes > MAX_BYTES {
                            self.fail(line, column, "aliases expand the document too much");
                            return;
                        }
                        match self.anchors.get(&id) {
                            Some((n, _)) => n.clone(),
                            None => return,
                        }
                    }
                    None => {
                        if self.error.is_none() {
                            self.error = Some(ScenarioError::new(line, column, "unknown alias"));
                        }
                        Node {
                            line,
                            column,
                            value: NodeValue::Scalar(Scalar {
                                text: String::new(),
                                kind: ScalarKind::Null,
                            }),
                        }
                    }
                };
                self.push_node(node, 0);
            }
            _ => {}
        }
    }
}

/// The nodes and bytes of a tree.
fn measure(node: &Node) -> Size {
    let add = |a: Size, b: Size| Size {
        nodes: a.nodes.saturating_add(b.nodes),
        bytes: a.bytes.saturating_add(b.bytes),
    };
    let own = Size {
        nodes: 1,
        bytes: NODE_BYTES,
    };
    match &node.value {
        NodeValue::Scalar(s) => Size {
            nodes: 1,
            bytes: s.text.len() + NODE_BYTES,
        },
        NodeValue::Seq(items) => items.iter().map(measure).fold(own, add),
        NodeValue::Map(pairs) => pairs
            .iter()
            .map(|(k, v)| add(measure(k), measure(v)))
            .fold(own, add),
    }
}

/// Resolves a scalar with the YAML 1.2 core schema (quoted scalars are strings).
fn resolve(text: &str, style: TScalarStyle, tag: Option<&str>) -> ScalarKind {
    match tag {
        Some("str") => return ScalarKind::Str,
        Some("null") => return ScalarKind::Null,
        Some("bool") => {
            return match text {
                "true" | "True" | "TRUE" => ScalarKind::Bool(true),
                "false" | "False" | "FALSE" => ScalarKind::Bool(false),
                _ => ScalarKind::Str,
            };
        }
        Some("int") => {
            return parse_int(text).map_or(ScalarKind::Str, ScalarKind::Int);
        }
        Some("float") => {
            return parse_float(text).map_or(ScalarKind::Str, ScalarKind::Float);
        }
        _ => {}
    }
    if style != TScalarStyle::Plain {
        return ScalarKind::Str;
    }
    match text {
        "" | "~" | "null" | "Null" | "NULL" => return ScalarKind::Null,
        "true" | "True" | "TRUE" => return ScalarKind::Bool(true),
        "false" | "False" | "FALSE" => return ScalarKind::Bool(false),
        _ => {}
    }
    if let Some(i) = parse_int(text) {
        return ScalarKind::Int(i);
    }
    if let Some(f) = parse_float(text) {
        return ScalarKind::Float(f);
    }
    ScalarKind::Str
}

fn parse_int(text: &str) -> Option<i64> {
    if let Some(hex) = text.strip_prefix("0x") {
        return i64::from_str_radix(hex, 16).ok();
    }
    if let Some(oct) = text.strip_prefix("0o") {
        return i64::from_str_radix(oct, 8).ok();
    }
    let digits = text.strip_prefix(['+', '-']).unwrap_or(text);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

fn parse_float(text: &str) -> Option<f64> {
    match text {
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => return Some(f64::INFINITY),
        "-.inf" | "-.Inf" | "-.INF" => return Some(f64::NEG_INFINITY),
        ".nan" | ".NaN" | ".NAN" => return Some(f64::NAN),
        _ => {}
    }
    let body = text.strip_prefix(['+', '-']).unwrap_or(text);
    let valid = !body.is_empty()
        && body
            .bytes()
            .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'+' | b'-'))
        && body
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_digit() || b == b'.')
        && body.bytes().any(|b| b.is_ascii_digit());
    if valid { text.parse().ok() } else { None }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_are_one_based() {
        let root = load("a: b\nlist:\n  - x: 1\n").expect("valid");
        let NodeValue::Map(pairs) = &root.value else {
            panic!("map")
        };
        assert_eq!((pairs[0].0.line, pairs[0].0.column), (1, 1));
        assert_eq!((pairs[0].1.line, pairs[0].1.column), (1, 4));
        let NodeValue::Seq(items) = &pairs[1].1.value else {
            panic!("seq")
        };
        assert_eq!((items[0].line, items[0].column), (3, 5));
    }

    #[test]
    fn scalars_resolve_with_core_schema() {
        let root = load("[1, +15551234567, 1.5, true, ~, '2', x, $a]").expect("valid");
        let NodeValue::Seq(items) = &root.value else {
            panic!("seq")
        };
        let kinds: Vec<_> = items
            .iter()
            .map(|n| match &n.value {
                NodeValue::Scalar(s) => s.kind.clone(),
                _ => ScalarKind::Null,
            })
            .collect();
        assert_eq!(
            kinds,
            vec![
                ScalarKind::Int(1),
                ScalarKind::Int(15551234567),
                ScalarKind::Float(1.5),
                ScalarKind::Bool(true),
                ScalarKind::Null,
                ScalarKind::Str,
                ScalarKind::Str,
                ScalarKind::Str
            ]
        );
        assert_eq!(items[1].scalar_text(), Some("+15551234567"));
    }

    #[test]
    fn alias_bombs_and_deep_nesting_are_refused() {
        let mut bomb = String::from("a: &a [x, x, x, x, x, x, x, x, x, x]\n");
        let mut prev = 'a';
        for name in ['b', 'c', 'd', 'e', 'f', 'g'] {
            bomb.push_str(&format!(
                "{name}: &{name} [*{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}]\n"
            ));
            prev = name;
        }
        let err = load(&bomb).expect_err("bomb");
        assert!(err.message.contains("expand"), "{err}");
        // Few nodes, many bytes: a 4 KB string aliased 10 x 10 x 10 times.
        let mut wide = format!("a: &a \"{}\"\n", "x".repeat(4_000));
        let mut prev = 'a';
        for name in ['b', 'c', 'd'] {
            wide.push_str(&format!(
                "{name}: &{name} [{}]\n",
                vec![format!("*{prev}"); 10].join(", ")
            ));
            prev = name;
        }
        assert!(wide.len() < 8_192, "{}", wide.len());
        let err = load(&wide).expect_err("wide");
        assert!(err.message.contains("expand"), "{err}");
        let deep = format!("{}{}", "[".repeat(100), "]".repeat(100));
        let err = load(&deep).expect_err("deep");
        assert!(err.message.contains("nested"), "{err}");
    }

    #[test]
    fn duplicate_keys_and_syntax_errors_are_positioned() {
        let err = load("a: 1\na: 2\n").expect_err("duplicate");
        assert_eq!((err.line, err.column), (2, 1));
        let err = load("a: [1, 2\nb: 3\n").expect_err("syntax");
        assert!(err.message.starts_with("YAML syntax"), "{err}");
    }
}
