//! Black-box tests of the dialtone server over HTTP. Every test runs against SQLite, and
//! against PostgreSQL when DIALTONE_TEST_DATABASE_URL is set (otherwise it says it skipped).

#![allow(
    clippy::unwrap_used,
    clippy::too_many_lines,
    reason = "tests: a failed unwrap is a failed test, and a scenario reads best whole"
)]

mod helpers;

mod actions;
mod admin;
mod audio_files;
mod auth;
mod billing;
mod console;
mod conventions;
mod fuzz;
mod hostile;
mod hostile_connections;
mod hostile_outbound;
mod hostile_quotas;
mod https;
mod idempotency;
mod isolation;
mod jsonrpc;
mod jsonrpc_clients;
mod numbers;
mod rate_limits;
mod receiver;
mod recordings;
mod retention;
mod sdk;
mod sip;
mod slow_clients;
mod smpp;
mod smpp_faults;
mod sms;
mod speech;
mod tasks;
mod voice_peers;
mod webdriver;
mod webhooks;
