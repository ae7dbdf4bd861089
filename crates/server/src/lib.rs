//! The dialtone server: configuration, command line, the HTTP interfaces (REST v2.0, the
//! operator API, health and metrics), authentication, background workers and start-up.
//!
//! Handlers are thin: they parse and validate into domain types, call the store, and render.
//! Business rules live in `dialtone-domain`; SQL lives in `dialtone-store`.

pub(crate) mod admin;
pub(crate) mod admin_sip;
pub(crate) mod admin_smpp;
pub mod app;
pub(crate) mod billing;
pub mod bootstrap;
pub mod cli;
pub mod config;
pub(crate) mod console;
pub(crate) mod error;
pub(crate) mod http;
pub(crate) mod jsonrpc;
pub(crate) mod media;
pub(crate) mod metrics;
pub(crate) mod networks;
pub(crate) mod numbers;
pub(crate) mod ops;
pub mod outbound;
pub mod provisioning;
pub(crate) mod quotas;
pub(crate) mod rest11;
pub(crate) mod sandbox;
pub(crate) mod scenarios;
pub(crate) mod serve;
pub(crate) mod share;
pub(crate) mod sms;
pub(crate) mod speech;
pub mod state;
pub(crate) mod tally;
pub(crate) mod tasks;
pub mod tls;
pub(crate) mod v2;
pub(crate) mod voice;
pub(crate) mod wake;
pub(crate) mod webhooks;
pub mod workers;

pub use app::Application;
pub use config::Config;

/// What the `dialtone` binary's operator commands use besides the server: accounts made
/// from the command line, the number inventory and rate table imports, and the audio
/// converter's child process.
pub mod operator {
    pub use crate::admin::AccountView;
    pub use crate::billing::rates::{import as import_rates, parse as parse_rates};
    pub use crate::media::converter::run_child as run_converter_child;
    pub use crate::numbers::inventory::{import as import_inventory, parse as parse_inventory};
}

/// What the black-box tests drive directly besides the interfaces: the audio converter
/// with its bounds, the record-by-phone line, and the SMPP events of a connector.
pub mod testing {
    pub use crate::media::conversion::{LEASE_MS, MAX_ATTEMPTS};
    pub use crate::media::converter::{Budget, convert};
    pub use crate::media::{budget, emit_status, limits, phone_recording};
    pub use crate::sms::carrier_events::handle;

    /// A one-time console link (its path) for the account of `sid`.
    ///
    /// # Panics
    /// When there is no such account or the link cannot be stored.
    pub async fn console_link(state: &crate::state::AppState, sid: &str) -> String {
        let sid = dialtone_domain::Sid::parse(sid).expect("an account sid");
        let account = state
            .store
            .read(move |c| dialtone_store::accounts::by_sid(c, &sid))
            .await
            .expect("read")
            .expect("the account");
        crate::console::session::one_time_link(state, account.id)
            .await
            .expect("a link")
    }
}
