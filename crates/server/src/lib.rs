//! The dialtone server: configuration, command line, the HTTP interfaces (REST v2.0, the
//! operator API, health and metrics), authentication, background workers and start-up.
//!
//! Handlers are thin: they parse and validate into domain types, call the store, and render.
//! Business rules live in `dialtone-domain`; SQL lives in `dialtone-store`.

pub mod admin;
pub mod admin_smpp;
pub mod app;
pub mod billing;
pub mod bootstrap;
pub mod cli;
pub mod config;
pub mod http;
pub mod jsonrpc;
pub mod media;
pub mod metrics;
pub mod networks;
pub mod numbers;
pub mod ops;
pub mod outbound;
pub mod provisioning;
pub mod quotas;
pub mod rest11;
pub mod sandbox;
pub mod scenarios;
pub mod serve;
pub mod share;
pub mod sms;
pub mod state;
pub mod tally;
pub mod tasks;
pub mod tls;
pub mod v2;
pub mod wake;
pub mod webhooks;
pub mod workers;

pub use app::Application;
pub use config::Config;
