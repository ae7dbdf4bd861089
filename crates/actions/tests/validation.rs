//! Every validation error, with the line and column of the offending node.

#![allow(
    clippy::unwrap_used,
    clippy::too_many_lines,
    reason = "tests: a failed unwrap is a failed test, and a scenario reads best whole"
)]

use dialtone_actions::{ScenarioError, parse_scenario, schema};

fn error(yaml: &str) -> ScenarioError {
    match parse_scenario(yaml) {
        Ok(_) => panic!("expected an error for:\n{yaml}"),
        Err(e) => e,
    }
}

fn at(yaml: &str, line: usize, column: usize, contains: &str) {
    let e = error(yaml);
    assert_eq!((e.line, e.column), (line, column), "{e}");
    assert!(e.message.contains(contains), "{e}");
}

#[test]
fn display_is_line_column_message() {
    let e = error("branches: {}\nextra: 1\n");
    assert_eq!(e.to_string(), format!("line 2, column 1: {}", e.message));
}

#[test]
fn yaml_syntax_errors() {
    let e = error("branches:\n  a: [1, 2\n  b: 3\n");
    assert!(e.message.starts_with("YAML syntax"), "{e}");
    assert!(e.line >= 2, "{e}");
    at("- just\n- a list\n", 1, 1, "a scenario is a map");
    at("description: x\n", 1, 1, "no `branches`");
    at(
        "branches:\n  a: { actions: [] }\n  a: { actions: [] }\n",
        3,
        3,
        "duplicate key `a`",
    );
}

#[test]
fn unknown_keys() {
    at(
        "branches: {}\nversion: 1\n",
        2,
        1,
        "unknown top-level key `version`",
    );
    at(
        "defaults:\n  autoanswer: true\nbranches: {}\n",
        2,
        3,
        "unknown key `autoanswer` in defaults",
    );
    at(
        "branches:\n  main:\n    action: []\n",
        3,
        5,
        "unknown key `action` in a branch",
    );
    at(
        "branches:\n  main:\n    actions:\n      - action: hangup@v1\n        result: $x\n        else: []\n",
        6,
        9,
        "unknown key `else` in an action entry",
    );
}

#[test]
fn unknown_actions_and_versions() {
    at(
        "branches:\n  main:\n    actions:\n      - action: teleport@v1\n",
        4,
        17,
        "unknown action `teleport`",
    );
    at(
        "branches:\n  main:\n    actions:\n      - action: say@v9\n",
        4,
        17,
        "unknown version v9 of action `say`",
    );
    at(
        "branches:\n  main:\n    actions:\n      - action: say\n",
        4,
        17,
        "name@vN",
    );
}

#[test]
fn parameters_missing_unknown_or_mistyped() {
    at(
        "branches:\n  main:\n    actions:\n      - action: say@v2\n",
        4,
        17,
        "missing parameter `what` of say@v2",
    );
    at(
        "branches:\n  main:\n    actions:\n      - action: say@v2\n        params:\n          language: en-US\n",
        6,
        11,
        "missing parameter `what`",
    );
    at(
        "branches:\n  main:\n    actions:\n      - action: say@v2\n        params:\n          what: hi\n          voice: x\n",
        7,
        11,
        "unknown parameter `voice` of say@v2",
    );
    at(
        "branches:\n  main:\n    actions:\n      - action: gather@v2\n        params:\n          maxDigits: many\n",
        6,
        22,
        "`maxDigits` of gather@v2 must be an integer",
    );
    at(
        "branches:\n  main:\n    actions:\n      - action: dial@v1\n        params:\n          targets:\n            - number: '+1'\n              timeout: soon\n",
        8,
        24,
        "`timeout` of item 1",
    );
    at(
        "branches:\n  main:\n    actions:\n      - action: sms@v1\n        params: { to: '+1', body: x }\n",
        5,
        23,
        "must be a list",
    );
    at(
        "branches:\n  main:\n    actions:\n      - action: bridge@v1\n        params: { with: x }\n",
        5,
        19,
        "bridge@v1 takes no parameters",
    );
    at(
        "branches:\n  main:\n    actions:\n      - params: { what: x }\n        goto: main\n",
        4,
        9,
        "`params` needs an `action`",
    );
}

#[test]
fn missing_branches() {
    at(
        "branches:\n  main:\n    actions:\n      - if: 'true'\n        goto: { branch: nowhere }\n",
        5,
        25,
        "goto names the missing branch `nowhere`",
    );
    at(
        "branches:\n  main:\n    actions:\n      - goto: nowhere\n",
        4,
        15,
        "missing branch `nowhere`",
    );
    at(
        "branches:\n  main:\n    actions:\n      - action: dial@v1\n        params:\n          targets: [ { number: '+1' } ]\n          answerOnBranch: answered\n",
        7,
        27,
        "answerOnBranch names the missing branch `answered`",
    );
}

#[test]
fn variable_names_start_with_dollar() {
    at(
        "variables:\n  target: 1\nbranches: {}\n",
        2,
        3,
        "variable name `target` must start with `$`",
    );
    at(
        "variables:\n  $a-b: 1\nbranches: {}\n",
        2,
        3,
        "must be `$` followed by",
    );
    at(
        "branches:\n  main:\n    actions:\n      - action: gather@v2\n        params: { maxDigits: 1 }\n        result: choice\n",
        6,
        17,
        "`choice` must start with `$`",
    );
}

#[test]
fn expressions_that_do_not_compile() {
    at(
        "branches:\n  main:\n    actions:\n      - action: say@v2\n        params:\n          what: 'Hello ${{ call.( }}'\n",
        6,
        17,
        "expression `call.(` does not compile",
    );
    at(
        "branches:\n  main:\n    actions:\n      - if: '$x ==='\n        goto: main\n",
        4,
        13,
        "expression `$x ===` does not compile",
    );
    at(
        "branches:\n  main:\n    actions:\n      - action: javascript@v1\n        params:\n          code: 'let = = 1'\n",
        6,
        17,
        "JavaScript code `let = = 1` does not compile",
    );
    at(
        "branches:\n  main:\n    actions:\n      - action: say@v2\n        params:\n          what: 'Hello ${{ name'\n",
        6,
        17,
        "without a closing",
    );
}

#[test]
fn entries_need_something_to_do_and_known_events() {
    at(
        "branches:\n  main:\n    actions:\n      - if: 'true'\n",
        4,
        9,
        "an entry needs `action`",
    );
    at(
        "branches:\n  main:\n    actions:\n      - action: say@v2\n        params: { what: x }\n        events:\n          done: []\n",
        7,
        11,
        "say@v2 has no events",
    );
    at(
        "branches:\n  main:\n    actions:\n      - action: startRecording@v1\n        events:\n          finished: []\n",
        6,
        11,
        "unknown event `finished` of startRecording@v1 (known: ready)",
    );
}

#[test]
fn the_schema_describes_the_grammar() {
    let s = schema();
    assert_eq!(s["$schema"], "https://json-schema.org/draft/2020-12/schema");
    assert_eq!(s["required"][0], "branches");
    let defs = s["$defs"].as_object().expect("defs");
    for id in dialtone_actions::action_ids() {
        let (name, version) = id.split_once('@').expect("id");
        let def = &defs[&format!("action-{name}-{version}")];
        assert_eq!(def["properties"]["action"]["const"], id.as_str());
    }
    assert_eq!(
        defs["action-gather-v2"]["properties"]["params"]["required"],
        serde_json::json!(["maxDigits"])
    );
}
