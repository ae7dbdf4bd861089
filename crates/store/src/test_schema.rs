//! A PostgreSQL schema of its own for one test, for the tests of every crate: made empty in
//! the test database, reached through a URL whose `search_path` names it, and dropped with
//! its guard. Not used by the server itself.

use crate::{DatabaseUrl, DbError, Store, StoreOptions};

/// A test's schema, dropped (with everything in it) when this guard is.
#[derive(Debug)]
pub struct TestSchema {
    admin_url: String,
    name: String,
}

/// Runs `sql` on a plain thread: the blocking client cannot run inside the test's runtime.
fn run(admin_url: &str, sql: String) -> Result<(), DbError> {
    let admin_url = admin_url.to_owned();
    std::thread::spawn(move || {
        let mut c = postgres::Client::connect(&admin_url, postgres::NoTls)
            .map_err(|e| DbError::Other(format!("connect to the test database: {e}")))?;
        c.batch_execute(&sql)
            .map_err(|e| DbError::Other(format!("{sql}: {e}")))
    })
    .join()
    .map_err(|_| DbError::Other("the schema's thread panicked".into()))?
}

impl TestSchema {
    /// Makes schema `name` afresh (dropping one an interrupted run left) in the database of
    /// `admin_url`: its guard, and the URL that opens a store in it.
    ///
    /// # Errors
    /// When the test database cannot be reached or the schema made.
    pub fn create(admin_url: &str, name: &str) -> Result<(Self, DatabaseUrl), DbError> {
        run(
            admin_url,
            format!("DROP SCHEMA IF EXISTS {name} CASCADE; CREATE SCHEMA {name}"),
        )?;
        let sep = if admin_url.contains('?') { '&' } else { '?' };
        let url = DatabaseUrl::Postgres(format!("{admin_url}{sep}options=-csearch_path%3D{name}"));
        let schema = Self {
            admin_url: admin_url.to_owned(),
            name: name.to_owned(),
        };
        Ok((schema, url))
    }
}

impl Drop for TestSchema {
    fn drop(&mut self) {
        let sql = format!("DROP SCHEMA IF EXISTS {} CASCADE", self.name);
        if let Err(e) = run(&self.admin_url, sql) {
            eprintln!("the test schema {} was left behind: {e}", self.name);
        }
    }
}

/// A store on PostgreSQL in a fresh schema named `prefix` and the process id, with its
/// guard (drop the store first), or None without `DIALTONE_TEST_DATABASE_URL`: the test
/// then says it was skipped, or fails when `DIALTONE_REQUIRE_PEERS` is set (as in CI).
///
/// # Panics
/// When the schema cannot be made or the store opened, or a required database is missing.
pub async fn postgres_store(prefix: &str, options: &StoreOptions) -> Option<(Store, TestSchema)> {
    let (mut stores, schema) = postgres_nodes(prefix, options, 1).await?;
    stores.pop().map(|store| (store, schema))
}

/// `n` stores on one PostgreSQL schema, each with its own connections and writer (nodes of
/// one platform), as [`postgres_store`] makes one.
///
/// # Panics
/// As [`postgres_store`].
pub async fn postgres_nodes(
    prefix: &str,
    options: &StoreOptions,
    n: usize,
) -> Option<(Vec<Store>, TestSchema)> {
    let Ok(admin) = std::env::var("DIALTONE_TEST_DATABASE_URL") else {
        assert!(
            std::env::var_os("DIALTONE_REQUIRE_PEERS").is_none(),
            "a required peer is missing: DIALTONE_TEST_DATABASE_URL (PostgreSQL)"
        );
        eprintln!("SKIPPED: set DIALTONE_TEST_DATABASE_URL to run this test on PostgreSQL");
        return None;
    };
    let name = format!("{prefix}_{}", std::process::id());
    let (schema, url) = TestSchema::create(&admin, &name).expect("the test's schema");
    let mut stores = Vec::with_capacity(n);
    for _ in 0..n {
        stores.push(Store::open(&url, options).await.expect("open PostgreSQL"));
    }
    Some((stores, schema))
}
