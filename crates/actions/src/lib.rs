//! `dialtone-actions`: the Actions scenario interpreter, a pure library.
//!
//! It owns the Actions grammar (the real service's YAML: `description`, `variables`,
//! `defaults`, `branches` of action entries with `action`, `params`, `result`, `if`, `goto`,
//! `then`, `events`), its validation with line and column ([`parse_scenario`]), its JSON Schema
//! ([`schema`]), and a step-by-step executor ([`start`], [`resume`], [`start_branch`]) that
//! turns a scenario into [`Command`]s for the server and consumes [`Event`]s from it. The
//! complete state of a run is a serializable [`RunState`].
//!
//! Expressions (`${{ }}` in parameters, bare JavaScript in `if`, `javascript@v1` code) run in
//! an embedded QuickJS sandbox with no I/O, a CPU-time limit and a memory limit ([`Limits`]).
//!
//! The crate does no I/O of its own: no network, no files, no clock (the server passes `now`).
//! The driver protocol is described in the crate's README.

mod catalog;
mod commands;
mod error;
mod outcome;
mod parse;
mod protocol;
mod run;
mod sandbox;
mod scenario;
mod schema;
mod state;
mod template;
mod yaml;

pub use error::ScenarioError;
pub use parse::parse_scenario;
pub use protocol::{
    Command, CommandKind, Context, DialTarget, Event, Limits, LogEntry, Outcome, Step,
};
pub use run::{resume, start, start_branch};
pub use scenario::Scenario;
pub use schema::schema;
pub use state::RunState;

/// Names and versions of every known action, as `name@vN`.
pub fn action_ids() -> Vec<String> {
    catalog::ACTIONS.iter().map(|a| a.id()).collect()
}
