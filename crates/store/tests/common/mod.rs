//! Stores for the tests of this crate: a SQLite file, and a PostgreSQL schema of its own
//! when `DIALTONE_TEST_DATABASE_URL` is set (`dialtone_store::test_schema`).

use dialtone_domain::account::BillingMode;
use dialtone_domain::{Money, Timestamp};
use dialtone_store::sms::NewSms;
use dialtone_store::{DatabaseUrl, Store, StoreOptions, accounts};

/// A store on a fresh SQLite file; the directory lives as long as the guard.
pub(crate) async fn sqlite() -> (Store, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("temp dir");
    let url = DatabaseUrl::Sqlite(dir.path().join("t.db"));
    let store = Store::open(&url, &StoreOptions::default())
        .await
        .expect("open SQLite");
    (store, dir)
}

pub(crate) use dialtone_store::test_schema::postgres_store as postgres;

/// A prepaid account named `name` (its key hash and id made from it) holding `credit`, with
/// no warning level and `shutdown` as its shutdown level: its id.
#[allow(dead_code, reason = "not every test of this crate makes accounts")]
pub(crate) async fn prepaid_account(
    store: &Store,
    name: &str,
    credit: Money,
    shutdown: Money,
    now: Timestamp,
) -> i64 {
    let name = name.to_owned();
    store
        .write(move |c| {
            accounts::create(
                c,
                &accounts::NewAccount {
                    name: name.clone(),
                    parent_id: None,
                    currency: "EUR".into(),
                    billing_mode: BillingMode::Prepaid,
                    credit,
                    login: None,
                    password_hash: String::new(),
                    key_hash: format!("k{name}"),
                    key_id: format!("k{name}"),
                    warning_level: Money::ZERO,
                    shutdown_level: shutdown,
                },
                now,
            )
        })
        .await
        .expect("account made")
        .id
}

/// A new outbound SMS of the account on the simulated network, due at `next_at`.
#[allow(dead_code, reason = "not every test of this crate stores SMS")]
pub(crate) fn outbound_sms(account_id: i64, next_at: Option<Timestamp>) -> NewSms {
    NewSms {
        account_id,
        direction: "outbound",
        from: "SMS".into(),
        to: "+447700900555".into(),
        body: "hello".into(),
        encoding: "gsm",
        parts: 1,
        traffic_type: Some("marketing"),
        status: "created",
        user_data: None,
        flash: false,
        webhook_url: None,
        billing_debit: Money::ZERO,
        carrier: "simulated".into(),
        next_at,
        delivered_at: None,
        history: Vec::new(),
        part_ids: None,
        plan_sent_at: None,
        plan_queued_at: None,
        plan_delivered_at: None,
    }
}
