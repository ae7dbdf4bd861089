//! Fuzz target of the scenario parser and validator: no input makes it panic. Under `cargo
//! test` bolero feeds it random inputs; `cargo bolero test scenario_parser_never_panics`
//! (cargo-bolero, libFuzzer) searches for as long as you let it.
//!
//! Inputs are assembled from YAML lines built from the grammar's own words, so the search
//! reaches the validator and the expression compiler, not only the YAML tokenizer.

#![allow(
    clippy::unwrap_used,
    clippy::too_many_lines,
    reason = "tests: a failed unwrap is a failed test, and a scenario reads best whole"
)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bolero::check;

const WORDS: &[&str] = &[
    "branches:",
    "inbound-call:",
    "inbound-sms:",
    "api-initiated:",
    "hangup:",
    "actions:",
    "- action: say@v2",
    "- action: gather@v2",
    "- action: dial@v1",
    "- action: play@v2",
    "- action: record@v1",
    "- action: sms@v1",
    "- action: fetch@v2",
    "- action: javascript@v1",
    "- action: goto@v1",
    "- action: hangup@v1",
    "- action: wait@v1",
    "- action: log@v1",
    "params:",
    "what: hello",
    "maxDigits: 4",
    "timeout: 5",
    "code: \"$x = 1\"",
    "result: $r",
    "if: \"${{ $x > 1 }}\"",
    "then:",
    "goto: { branch: other }",
    "events:",
    "ready:",
    "variables:",
    "$x: 1",
    "defaults:",
    "description: d",
    "target: \"+447700900123\"",
    "url: http://127.0.0.1/x",
    "message: \"${{ now.toISOString() }}\"",
    "- ",
    "{",
    "}",
    "[",
    "]",
    "\"${{",
    "}}\"",
    ": ",
    "&a",
    "*a",
    "!!str",
    "|",
    ">",
    "#",
    "\t",
    "~",
    "null",
];

#[test]
fn scenario_parser_never_panics() {
    static RUNS: AtomicUsize = AtomicUsize::new(0);
    check!()
        .with_test_time(Duration::from_secs(3))
        .with_type::<Vec<(u8, u8, String)>>()
        .for_each(|lines| {
            RUNS.fetch_add(1, Ordering::Relaxed);
            let mut yaml = String::new();
            for (indent, word, free) in lines {
                yaml.push_str(&" ".repeat(usize::from(indent % 8) * 2));
                yaml.push_str(WORDS[usize::from(*word) % WORDS.len()]);
                if word % 3 == 0 {
                    yaml.push_str(free);
                }
                yaml.push('\n');
            }
            let _ = dialtone_actions::parse_scenario(&yaml);
        });
    eprintln!(
        "scenario parser: {} inputs, no panic",
        RUNS.load(Ordering::Relaxed)
    );
}

#[test]
fn any_text_is_refused_or_parsed_without_panic() {
    check!().with_type::<String>().for_each(|text| {
        let _ = dialtone_actions::parse_scenario(text);
    });
}
