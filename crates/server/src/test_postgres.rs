//! A PostgreSQL store for this crate's unit tests: a schema of its own, dropped with the
//! test, when `DIALTONE_TEST_DATABASE_URL` is set (CI sets it and `DIALTONE_REQUIRE_PEERS`,
//! so the test cannot skip there).

use dialtone_store::{DatabaseUrl, Store, StoreOptions};

/// A schema made for one test, dropped with it (after its store).
pub(crate) struct Schema {
    admin: String,
    name: String,
}

impl Drop for Schema {
    fn drop(&mut self) {
        run(
            &self.admin,
            format!("DROP SCHEMA IF EXISTS {} CASCADE", self.name),
        );
    }
}

fn run(admin: &str, sql: String) {
    let admin = admin.to_owned();
    std::thread::spawn(move || {
        let mut c = postgres::Client::connect(&admin, postgres::NoTls).expect("connect");
        c.batch_execute(&sql).expect("schema");
    })
    .join()
    .expect("join");
}

/// A store in a fresh schema named `prefix` and the process id, or None (the test says it
/// was skipped) without `DIALTONE_TEST_DATABASE_URL`.
pub(crate) async fn store(prefix: &str) -> Option<(Store, Schema)> {
    let Ok(admin) = std::env::var("DIALTONE_TEST_DATABASE_URL") else {
        assert!(
            std::env::var_os("DIALTONE_REQUIRE_PEERS").is_none(),
            "a required peer is missing: DIALTONE_TEST_DATABASE_URL (PostgreSQL)"
        );
        eprintln!("SKIPPED: set DIALTONE_TEST_DATABASE_URL to run this test on PostgreSQL");
        return None;
    };
    let name = format!("{prefix}_{}", std::process::id());
    run(
        &admin,
        format!("DROP SCHEMA IF EXISTS {name} CASCADE; CREATE SCHEMA {name}"),
    );
    let sep = if admin.contains('?') { '&' } else { '?' };
    let url = DatabaseUrl::Postgres(format!("{admin}{sep}options=-csearch_path%3D{name}"));
    let store = Store::open(&url, &StoreOptions::default())
        .await
        .expect("open PostgreSQL");
    Some((store, Schema { admin, name }))
}
