//! From YAML text to a validated [`Scenario`]: grammar, parameters, branch references and a
//! compile check of every JavaScript expression (nothing is run).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde_json::Value;

use crate::catalog::{self, ActionSpec, Field, Kind, Ty};
use crate::error::ScenarioError;
use crate::sandbox;
use crate::scenario::{self, ActionCall, Entry, ListId, Scenario};
use crate::template::{self, Template};
use crate::yaml::{self, Node, NodeValue, ScalarKind, key_text};

const TOP_KEYS: &[&str] = &["description", "variables", "defaults", "branches"];
const DEFAULT_KEYS: &[&str] = &["autoAnswer", "language"];
const ENTRY_KEYS: &[&str] = &["action", "params", "result", "if", "goto", "then", "events"];

/// Parses and validates a scenario.
///
/// Every error carries the 1-based line and column of the offending YAML node.
pub fn parse_scenario(yaml: &str) -> Result<Scenario, ScenarioError> {
    let root = yaml::load(yaml)?;
    let NodeValue::Map(top) = &root.value else {
        return Err(root.error("a scenario is a map with `branches` (and optionally `description`, `variables`, `defaults`)"));
    };
    let mut builder = Builder::default();
    let mut scenario = Scenario {
        description: None,
        variables: Vec::new(),
        auto_answer: true,
        language: None,
        branches: BTreeMap::new(),
        lists: Vec::new(),
        script_names: HashMap::new(),
        fingerprint: scenario::fingerprint(yaml),
    };
    let mut branches_node = None;
    for (key, value) in top {
        match key_text(key).as_str() {
            "description" => {
                if !value.is_null() {
                    let text = value
                        .scalar_text()
                        .ok_or_else(|| value.error("`description` must be a string"))?;
                    scenario.description = Some(text.to_string());
                }
            }
            "variables" => scenario.variables = builder.variables(value)?,
            "defaults" => {
                let (auto_answer, language) = defaults(value)?;
                scenario.auto_answer = auto_answer;
                scenario.language = language;
            }
            "branches" => branches_node = Some(value),
            other => {
                return Err(key.error(format!(
                    "unknown top-level key `{other}` (expected one of: {})",
                    TOP_KEYS.join(", ")
                )));
            }
        }
    }
    let branches_node =
        branches_node.ok_or_else(|| root.error("the scenario has no `branches`"))?;
    let NodeValue::Map(branches) = &branches_node.value else {
        return Err(
            branches_node.error("`branches` must be a map of branch name to `{actions: [...]}`")
        );
    };
    for (name_node, branch) in branches {
        let name = name_node
            .as_str()
            .ok_or_else(|| name_node.error("a branch name must be a string"))?
            .to_string();
        let actions = branch_actions(branch)?;
        let id = builder.list(actions)?;
        scenario.branches.insert(name, id);
    }
    for (branch, node, what) in &builder.references {
        if !scenario.branches.contains_key(branch) {
            return Err(node.error(format!("{what} names the missing branch `{branch}`")));
        }
    }
    for check in &builder.scripts {
        let source = if check.is_code {
            check.source.clone()
        } else {
            format!("(\n{}\n)", check.source)
        };
        sandbox::compile_check(&source).map_err(|e| {
            ScenarioError::new(
                check.line,
                check.column,
                format!(
                    "{} `{}` does not compile: {e}",
                    if check.is_code {
                        "JavaScript code"
                    } else {
                        "expression"
                    },
                    shorten(&check.source)
                ),
            )
        })?;
        scenario
            .script_names
            .entry(check.source.clone())
            .or_insert_with(|| names_used(&check.source));
    }
    scenario.lists = builder.lists;
    Ok(scenario)
}

struct Script {
    source: String,
    line: usize,
    column: usize,
    is_code: bool,
}

#[derive(Default)]
struct Builder {
    lists: Vec<Vec<Entry>>,
    references: Vec<(String, Node, &'static str)>,
    scripts: Vec<Script>,
}

fn defaults(node: &Node) -> Result<(bool, Option<String>), ScenarioError> {
    let mut auto_answer = true;
    let mut language = None;
    if node.is_null() {
        return Ok((auto_answer, language));
    }
    let NodeValue::Map(pairs) = &node.value else {
        return Err(node.error("`defaults` must be a map"));
    };
    for (key, value) in pairs {
        match key_text(key).as_str() {
            "autoAnswer" => match &value.value {
                NodeValue::Scalar(s) => match s.kind {
                    ScalarKind::Bool(b) => auto_answer = b,
                    _ => return Err(value.error("`autoAnswer` must be true or false")),
                },
                _ => return Err(value.error("`autoAnswer` must be true or false")),
            },
            "language" => {
                if !value.is_null() {
                    language = Some(
                        value
                            .scalar_text()
                            .ok_or_else(|| value.error("`language` must be a string"))?
                            .to_string(),
                    );
                }
            }
            other => {
                return Err(key.error(format!(
                    "unknown key `{other}` in defaults (expected one of: {})",
                    DEFAULT_KEYS.join(", ")
                )));
            }
        }
    }
    Ok((auto_answer, language))
}

fn branch_actions(branch: &Node) -> Result<Vec<&Node>, ScenarioError> {
    match &branch.value {
        // `branch: [entries]` is accepted as a shorthand (a published example writes it so).
        NodeValue::Seq(items) => Ok(items.iter().collect()),
        NodeValue::Map(pairs) => {
            let mut actions = Vec::new();
            for (key, value) in pairs {
                match key_text(key).as_str() {
                    "actions" => actions = entry_list(value, "actions")?,
                    other => {
                        return Err(key.error(format!(
                            "unknown key `{other}` in a branch (expected `actions`)"
                        )));
                    }
                }
            }
            Ok(actions)
        }
        _ if branch.is_null() => Ok(Vec::new()),
        _ => Err(branch.error("a branch must be a map with `actions: [...]`")),
    }
}

fn entry_list<'a>(node: &'a Node, what: &str) -> Result<Vec<&'a Node>, ScenarioError> {
    match &node.value {
        NodeValue::Seq(items) => Ok(items.iter().collect()),
        _ if node.is_null() => Ok(Vec::new()),
        _ => Err(node.error(format!("`{what}` must be a list of actions"))),
    }
}

impl Builder {
    fn variables(&mut self, node: &Node) -> Result<Vec<(String, Value)>, ScenarioError> {
        if node.is_null() {
            return Ok(Vec::new());
        }
        let NodeValue::Map(pairs) = &node.value else {
            return Err(node.error("`variables` must be a map of `$name: value`"));
        };
        let mut out = Vec::new();
        for (key, value) in pairs {
            let name = variable_name(key)?;
            // `$x: undefined` declares a variable without a value.
            if value.as_str() == Some("undefined")
                && matches!(&value.value, NodeValue::Scalar(s) if s.kind == ScalarKind::Str)
            {
                continue;
            }
            out.push((name, value.to_json()));
        }
        Ok(out)
    }

    fn list(&mut self, entries: Vec<&Node>) -> Result<ListId, ScenarioError> {
        let id = ListId::try_from(self.lists.len()).unwrap_or(ListId::MAX);
        self.lists.push(Vec::new());
        let mut built = Vec::with_capacity(entries.len());
        for node in entries {
            if node.is_null() {
                continue; // an empty list item (a placeholder) does nothing
            }
            built.push(self.entry(node)?);
        }
        if let Some(slot) = self.lists.get_mut(id as usize) {
            *slot = built;
        }
        Ok(id)
    }

    fn entry(&mut self, node: &Node) -> Result<Entry, ScenarioError> {
        let NodeValue::Map(pairs) = &node.value else {
            return Err(node.error("an entry of `actions` must be a map (`action`, `params`, `result`, `if`, `goto`, `then`, `events`)"));
        };
        let mut fields: BTreeMap<&str, (&Node, &Node)> = BTreeMap::new();
        for (key, value) in pairs {
            let name = key.as_str().unwrap_or("");
            match ENTRY_KEYS.iter().find(|k| **k == name) {
                Some(k) => {
                    fields.insert(k, (key, value));
                }
                None => {
                    return Err(key.error(format!(
                        "unknown key `{}` in an action entry (expected one of: {})",
                        key_text(key),
                        ENTRY_KEYS.join(", ")
                    )));
                }
            }
        }
        let spec = match fields.get("action") {
            Some((_, value)) => {
                let id = value
                    .as_str()
                    .ok_or_else(|| value.error("`action` must be written name@vN, e.g. say@v2"))?;
                Some(catalog::lookup(id).map_err(|m| value.error(m))?)
            }
            None => None,
        };
        for key in ["params", "result", "events"] {
            if spec.is_none()
                && let Some((k, _)) = fields.get(key)
            {
                return Err(k.error(format!("`{key}` needs an `action` in the same entry")));
            }
        }
        let condition = match fields.get("if") {
            Some((_, value)) => Some(self.condition(value)?),
            None => None,
        };
        let goto = match fields.get("goto") {
            Some((_, value)) => Some(self.goto(value)?),
            None => None,
        };
        let then = match fields.get("then") {
            Some((_, value)) => {
                let items = entry_list(value, "then")?;
                Some(self.list(items)?)
            }
            None => None,
        };
        if spec.is_none() && goto.is_none() && then.is_none() {
            return Err(node.error("an entry needs `action`, or `if` with `goto` or `then`"));
        }
        let action = match spec {
            Some(spec) => Some(self.action(spec, node, &fields)?),
            None => None,
        };
        Ok(Entry {
            line: node.line,
            column: node.column,
            condition,
            action,
            then,
            goto,
        })
    }

    fn condition(&mut self, value: &Node) -> Result<String, ScenarioError> {
        let text = value
            .scalar_text()
            .ok_or_else(|| value.error("`if` must be a JavaScript expression"))?;
        // `if: ${{ expr }}` is read as `if: expr`.
        let source = match template::of_string(text) {
            Ok(Template::Expr(e)) => e,
            _ => text.to_string(),
        };
        if source.trim().is_empty() {
            return Err(value.error("`if` must be a JavaScript expression"));
        }
        self.scripts.push(Script {
            source: source.clone(),
            line: value.line,
            column: value.column,
            is_code: false,
        });
        Ok(source)
    }

    fn goto(&mut self, value: &Node) -> Result<String, ScenarioError> {
        let (branch, at) = match &value.value {
            NodeValue::Map(pairs) => {
                let mut branch = None;
                for (key, v) in pairs {
                    match key_text(key).as_str() {
                        "branch" => branch = Some(v),
                        other => {
                            return Err(key.error(format!(
                                "unknown key `{other}` in goto (expected `branch`)"
                            )));
                        }
                    }
                }
                let v = branch.ok_or_else(|| value.error("`goto` needs `branch: <name>`"))?;
                let name = v
                    .as_str()
                    .ok_or_else(|| v.error("`goto.branch` must be a branch name"))?;
                (name.to_string(), v)
            }
            _ => {
                let name = value
                    .as_str()
                    .ok_or_else(|| value.error("`goto` must be `{branch: <name>}`"))?;
                (name.to_string(), value)
            }
        };
        self.references.push((branch.clone(), at.clone(), "goto"));
        Ok(branch)
    }

    fn action(
        &mut self,
        spec: &'static ActionSpec,
        entry: &Node,
        fields: &BTreeMap<&str, (&Node, &Node)>,
    ) -> Result<ActionCall, ScenarioError> {
        let id = spec.id();
        let params_node = fields.get("params").map(|(_, v)| *v);
        let action_node = fields.get("action").map_or(entry, |(_, v)| *v);
        let mut code = None;
        let params = match params_node {
            Some(node) if !node.is_null() => {
                let NodeValue::Map(pairs) = &node.value else {
                    return Err(node.error(format!("`params` of {id} must be a map")));
                };
                if spec.kind == Kind::Javascript {
                    code = Some(self.javascript_code(pairs, node, &id)?);
                    Template::Literal(Value::Null)
                } else {
                    self.object(pairs, node, spec.params, &id)?
                }
            }
            _ => {
                if let Some(missing) = spec.params.iter().find(|f| f.required) {
                    return Err(
                        action_node.error(format!("missing parameter `{}` of {id}", missing.name))
                    );
                }
                Template::Literal(Value::Object(serde_json::Map::new()))
            }
        };
        if spec.kind == Kind::Dial
            && let Some(node) = params_node
        {
            self.answer_on_branch(node);
        }
        let result = match fields.get("result") {
            Some((_, value)) => {
                let name = variable_name(value)?;
                Some(name)
            }
            None => None,
        };
        let mut events = Vec::new();
        if let Some((_, value)) = fields.get("events") {
            let NodeValue::Map(pairs) = &value.value else {
                return Err(
                    value.error("`events` must be a map of event name to a list of actions")
                );
            };
            for (key, handler) in pairs {
                let name = key_text(key);
                if !spec.events.iter().any(|e| e.name == name) {
                    let known: Vec<&str> = spec.events.iter().map(|e| e.name).collect();
                    return Err(key.error(if known.is_empty() {
                        format!("{id} has no events (got `{name}`)")
                    } else {
                        format!(
                            "unknown event `{name}` of {id} (known: {})",
                            known.join(", ")
                        )
                    }));
                }
                let items = entry_list(handler, "events")?;
                let list = self.list(items)?;
                events.push((name, list));
            }
        }
        Ok(ActionCall {
            spec,
            params,
            code,
            result,
            events,
        })
    }

    fn javascript_code(
        &mut self,
        pairs: &[(Node, Node)],
        node: &Node,
        id: &str,
    ) -> Result<String, ScenarioError> {
        let mut code = None;
        for (key, value) in pairs {
            match key_text(key).as_str() {
                "code" => {
                    let text = value.scalar_text().ok_or_else(|| {
                        value.error(format!("parameter `code` of {id} must be a string"))
                    })?;
                    self.scripts.push(Script {
                        source: text.to_string(),
                        line: value.line,
                        column: value.column,
                        is_code: true,
                    });
                    code = Some(text.to_string());
                }
                other => {
                    return Err(
                        key.error(format!("unknown parameter `{other}` of {id} (known: code)"))
                    );
                }
            }
        }
        code.ok_or_else(|| node.error(format!("missing parameter `code` of {id}")))
    }

    fn answer_on_branch(&mut self, params: &Node) {
        if let NodeValue::Map(pairs) = &params.value {
            for (key, value) in pairs {
                if key_text(key) == "answerOnBranch"
                    && let Some(name) = value.as_str()
                    && !name.contains("${{")
                {
                    self.references
                        .push((name.to_string(), value.clone(), "answerOnBranch"));
                }
            }
        }
    }

    fn object(
        &mut self,
        pairs: &[(Node, Node)],
        node: &Node,
        fields: &'static [Field],
        what: &str,
    ) -> Result<Template, ScenarioError> {
        let mut out = Vec::new();
        for (key, value) in pairs {
            let name = key_text(key);
            let Some(field) = fields.iter().find(|f| f.name == name) else {
                let known: Vec<&str> = fields.iter().map(|f| f.name).collect();
                return Err(key.error(if known.is_empty() {
                    format!("{what} takes no parameters (got `{name}`)")
                } else {
                    format!(
                        "unknown parameter `{name}` of {what} (known: {})",
                        known.join(", ")
                    )
                }));
            };
            if value.is_null() {
                if field.required {
                    return Err(
                        value.error(format!("parameter `{name}` of {what} must not be empty"))
                    );
                }
                continue;
            }
            let t = self.typed(value, &field.ty, &format!("parameter `{name}` of {what}"))?;
            out.push((name, t));
        }
        for field in fields.iter().filter(|f| f.required) {
            if !out.iter().any(|(n, _)| n == field.name)
                && !pairs.iter().any(|(k, _)| key_text(k) == field.name)
            {
                return Err(node.error(format!("missing parameter `{}` of {what}", field.name)));
            }
        }
        Ok(Template::map(out))
    }

    fn string_template(&mut self, node: &Node, text: &str) -> Result<Template, ScenarioError> {
        let t = template::of_string(text).map_err(|m| node.error(m))?;
        for expr in t.expressions() {
            self.scripts.push(Script {
                source: expr.to_string(),
                line: node.line,
                column: node.column,
                is_code: false,
            });
        }
        Ok(t)
    }

    fn typed(
        &mut self,
        node: &Node,
        ty: &'static Ty,
        what: &str,
    ) -> Result<Template, ScenarioError> {
        if let Some(text) = node.as_str()
            && text.contains("${{")
        {
            return self.string_template(node, text);
        }
        let scalar = match &node.value {
            NodeValue::Scalar(s) => Some(s),
            _ => None,
        };
        let wrong = |expected: &str| {
            node.error(format!(
                "{what} must be {expected}, not {}",
                node.type_name()
            ))
        };
        match ty {
            Ty::Str => match scalar {
                Some(s) if s.kind != ScalarKind::Null => {
                    Ok(Template::Literal(Value::String(s.text.clone())))
                }
                _ => Err(wrong("a string")),
            },
            Ty::Int => match scalar.map(|s| &s.kind) {
                Some(ScalarKind::Int(i)) => Ok(Template::Literal(Value::from(*i))),
                Some(ScalarKind::Float(f)) if f.fract() == 0.0 && f.is_finite() => {
                    Ok(Template::Literal(Value::from(*f as i64)))
                }
                _ => Err(wrong("an integer")),
            },
            Ty::Num => match scalar.map(|s| &s.kind) {
                Some(ScalarKind::Int(_)) | Some(ScalarKind::Float(_)) => {
                    Ok(Template::Literal(node.to_json()))
                }
                _ => Err(wrong("a number")),
            },
            Ty::Bool => match scalar.map(|s| &s.kind) {
                Some(ScalarKind::Bool(b)) => Ok(Template::Literal(Value::Bool(*b))),
                _ => Err(wrong("true or false")),
            },
            Ty::List(item) => match &node.value {
                NodeValue::Seq(items) => {
                    let mut out = Vec::with_capacity(items.len());
                    for (i, it) in items.iter().enumerate() {
                        out.push(self.typed(it, item, &format!("item {} of {what}", i + 1))?);
                    }
                    Ok(Template::seq(out))
                }
                _ => Err(wrong("a list")),
            },
            Ty::Obj(fields) => match &node.value {
                NodeValue::Map(pairs) => self.object(pairs, node, fields, what),
                _ => Err(wrong("a map")),
            },
            Ty::StrMap => match &node.value {
                NodeValue::Map(pairs) => {
                    let mut out = Vec::with_capacity(pairs.len());
                    for (k, v) in pairs {
                        let name = key_text(k);
                        let t = self.typed(v, &Ty::Str, &format!("`{name}` of {what}"))?;
                        out.push((name, t));
                    }
                    Ok(Template::map(out))
                }
                _ => Err(wrong("a map of strings")),
            },
            Ty::Body => self.any(node),
        }
    }

    fn any(&mut self, node: &Node) -> Result<Template, ScenarioError> {
        match &node.value {
            NodeValue::Scalar(_) => match node.as_str() {
                Some(text) => self.string_template(node, text),
                None => Ok(Template::Literal(node.to_json())),
            },
            NodeValue::Seq(items) => {
                let mut out = Vec::with_capacity(items.len());
                for it in items {
                    out.push(self.any(it)?);
                }
                Ok(Template::seq(out))
            }
            NodeValue::Map(pairs) => {
                let mut out = Vec::with_capacity(pairs.len());
                for (k, v) in pairs {
                    out.push((key_text(k), self.any(v)?));
                }
                Ok(Template::map(out))
            }
        }
    }
}

/// A `$name` from a node, or an error positioned at it.
fn variable_name(node: &Node) -> Result<String, ScenarioError> {
    let text = node
        .as_str()
        .ok_or_else(|| node.error("a variable name must be a string starting with `$`"))?;
    if !text.starts_with('$') {
        return Err(node.error(format!("variable name `{text}` must start with `$`")));
    }
    let valid = text.len() > 1
        && text
            .chars()
            .skip(1)
            .all(|c| c.is_alphanumeric() || c == '_' || c == '$');
    if !valid {
        return Err(node.error(format!(
            "variable name `{text}` must be `$` followed by letters, digits or `_`"
        )));
    }
    Ok(text.to_string())
}

/// Values the run provides besides `$variables`.
const PREDEFINED: &[&str] = &[
    "now",
    "run",
    "scenario",
    "app",
    "integrations",
    "call",
    "sms",
    "event",
    "recording",
];

/// The `$identifiers` and predefined names a script uses (identifiers not after a `.`).
fn names_used(source: &str) -> Vec<String> {
    let chars: Vec<char> = source.chars().collect();
    let is_ident = |c: char| c.is_alphanumeric() || c == '_' || c == '$';
    let mut out = BTreeSet::new();
    let mut i = 0;
    while i < chars.len() {
        if is_ident(chars[i]) && !(i > 0 && is_ident(chars[i - 1])) {
            let mut j = i;
            while j < chars.len() && is_ident(chars[j]) {
                j += 1;
            }
            let before = chars[..i].iter().rev().find(|c| !c.is_whitespace());
            let word: String = chars[i..j].iter().collect();
            let is_property = before == Some(&'.') && chars[..i].iter().rev().nth(1) != Some(&'.');
            if !is_property
                && ((word.starts_with('$') && word.len() > 1)
                    || PREDEFINED.contains(&word.as_str()))
            {
                out.insert(word);
            }
            i = j;
        } else {
            i += 1;
        }
    }
    out.into_iter().collect()
}

fn shorten(source: &str) -> String {
    let one_line = source.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() > 60 {
        let cut: String = one_line.chars().take(57).collect();
        format!("{cut}...")
    } else {
        one_line
    }
}
