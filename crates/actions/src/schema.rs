//! The JSON Schema (draft 2020-12) of the scenario grammar, generated from the action catalog.

use serde_json::{Map, Value, json};

use crate::catalog::{ACTIONS, ActionSpec, Field, Ty};

/// A string holding a `${{ }}` expression, accepted wherever a typed value is expected.
const EXPRESSION: &str = "#/$defs/expression";

/// The JSON Schema of a scenario (draft 2020-12).
pub fn schema() -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://dialtone.invalid/v2.0/actions/schema.json",
        "title": "Actions scenario",
        "type": "object",
        "properties": {
            "description": { "type": "string" },
            "variables": {
                "type": "object",
                "propertyNames": { "$ref": "#/$defs/variableName" },
                "description": "User variables; names begin with $."
            },
            "defaults": {
                "type": "object",
                "properties": {
                    "autoAnswer": { "type": "boolean", "default": true },
                    "language": { "type": "string", "examples": ["en-US", "en-GB"] }
                },
                "additionalProperties": false
            },
            "branches": {
                "type": "object",
                "description": "Branch name to its actions; entry branches: inbound-call, inbound-sms, api-initiated, hangup.",
                "additionalProperties": {
                    "oneOf": [
                        { "type": "object", "properties": { "actions": { "$ref": "#/$defs/actions" } },
                          "additionalProperties": false },
                        { "$ref": "#/$defs/actions" }
                    ]
                }
            }
        },
        "required": ["branches"],
        "additionalProperties": false,
        "$defs": definitions()
    })
}

/// The schema's `$defs`: expressions, entries, and one definition per action of the catalog.
fn definitions() -> Map<String, Value> {
    let mut defs = Map::new();
    defs.insert(
        "expression".into(),
        json!({
            "type": "string",
            "pattern": "\\$\\{\\{[\\s\\S]*\\}\\}",
            "description": "A string containing ${{ JavaScript expression }}, evaluated at run time."
        }),
    );
    defs.insert(
        "variableName".into(),
        json!({ "type": "string", "pattern": "^\\$[\\p{L}\\p{N}_$]+$" }),
    );
    defs.insert(
        "goto".into(),
        json!({
            "description": "Jump to another branch (no return).",
            "oneOf": [
                { "type": "object", "properties": { "branch": { "type": "string" } },
                  "required": ["branch"], "additionalProperties": false },
                { "type": "string" }
            ]
        }),
    );
    defs.insert(
        "actions".into(),
        json!({ "type": "array", "items": { "$ref": "#/$defs/entry" } }),
    );
    let action_refs: Vec<Value> = ACTIONS
        .iter()
        .map(|a| json!({ "$ref": format!("#/$defs/action-{}-v{}", a.name, a.version) }))
        .collect();
    defs.insert(
        "entry".into(),
        json!({
            "description": "An action entry: an action (optionally guarded by `if`), or `if` with `goto` or `then`.",
            "anyOf": [
                { "allOf": [ { "$ref": "#/$defs/entryKeys" }, { "required": ["action"] }, { "anyOf": action_refs } ] },
                { "allOf": [ { "$ref": "#/$defs/entryKeys" }, { "not": { "required": ["action"] } },
                             { "anyOf": [ { "required": ["goto"] }, { "required": ["then"] } ] },
                             { "not": { "anyOf": [ { "required": ["params"] }, { "required": ["result"] }, { "required": ["events"] } ] } } ] }
            ]
        }),
    );
    defs.insert(
        "entryKeys".into(),
        json!({
            "type": "object",
            "properties": {
                "action": { "type": "string", "pattern": "^[A-Za-z]+@v[0-9]+$" },
                "params": { "type": "object" },
                "result": { "$ref": "#/$defs/variableName" },
                "if": { "type": ["string", "boolean", "number"], "description": "JavaScript expression, without ${{ }}." },
                "goto": { "$ref": "#/$defs/goto" },
                "then": { "$ref": "#/$defs/actions" },
                "events": { "type": "object", "additionalProperties": { "$ref": "#/$defs/actions" } }
            },
            "additionalProperties": false
        }),
    );
    for action in ACTIONS {
        defs.insert(
            format!("action-{}-v{}", action.name, action.version),
            action_schema(action),
        );
    }
    defs
}

fn action_schema(action: &ActionSpec) -> Value {
    let mut entry = json!({
        "description": action.doc,
        "properties": {
            "action": { "const": action.id() },
            "params": object_schema(action.params)
        },
        "required": if action.params.iter().any(|f| f.required) { json!(["action", "params"]) } else { json!(["action"]) }
    });
    if !action.events.is_empty() {
        let props: Map<String, Value> = action
            .events
            .iter()
            .map(|e| {
                (
                    e.name.to_string(),
                    json!({ "$ref": "#/$defs/actions", "description": e.doc }),
                )
            })
            .collect();
        if let Some(obj) = entry.get_mut("properties").and_then(Value::as_object_mut) {
            obj.insert(
                "events".into(),
                json!({ "type": "object", "properties": props, "additionalProperties": false }),
            );
        }
    } else if let Some(obj) = entry.as_object_mut() {
        obj.insert("not".into(), json!({ "required": ["events"] }));
    }
    entry
}

fn object_schema(fields: &[Field]) -> Value {
    let props: Map<String, Value> = fields
        .iter()
        .map(|f| {
            let mut s = type_schema(&f.ty);
            if let Some(obj) = s.as_object_mut() {
                obj.insert("description".into(), Value::String(f.doc.to_string()));
            }
            (f.name.to_string(), s)
        })
        .collect();
    let required: Vec<&str> = fields
        .iter()
        .filter(|f| f.required)
        .map(|f| f.name)
        .collect();
    json!({
        "type": "object",
        "properties": props,
        "required": required,
        "additionalProperties": false
    })
}

fn type_schema(ty: &Ty) -> Value {
    let base = match ty {
        Ty::Str => json!({ "type": ["string", "number", "boolean"] }),
        Ty::Int => json!({ "type": "integer", "minimum": 0 }),
        Ty::Num => json!({ "type": "number", "minimum": 0 }),
        Ty::Bool => json!({ "type": "boolean" }),
        Ty::List(item) => json!({ "type": "array", "items": type_schema(item) }),
        Ty::Obj(fields) => object_schema(fields),
        Ty::StrMap => {
            json!({ "type": "object", "additionalProperties": { "type": ["string", "number", "boolean"] } })
        }
        Ty::Body => return json!({}),
    };
    json!({ "anyOf": [ base, { "$ref": EXPRESSION } ] })
}
