//! Schema migrations, one ordered list per backend, applied in one transaction.
//!
//! On PostgreSQL a transaction-scoped advisory lock makes nodes that start together apply
//! them once.

use crate::sql::{Conn, DbError, Dialect};
use crate::{Store, params};

/// A migration: version number and the SQL for each backend.
struct Migration {
    version: i64,
    name: &'static str,
    sqlite: &'static str,
    postgres: &'static str,
}

macro_rules! migration {
    ($version:expr, $name:literal) => {
        Migration {
            version: $version,
            name: $name,
            sqlite: include_str!(concat!("../migrations/sqlite/", $name, ".sql")),
            postgres: include_str!(concat!("../migrations/postgres/", $name, ".sql")),
        }
    };
}

const MIGRATIONS: &[Migration] = &[
    migration!(1, "0001_accounts"),
    migration!(2, "0002_end_users"),
    migration!(3, "0003_numbers"),
    migration!(4, "0004_sms"),
    migration!(5, "0005_webhooks"),
    migration!(6, "0006_billing"),
    migration!(7, "0007_actions"),
    migration!(8, "0008_audio_files"),
    migration!(9, "0009_tasks"),
    migration!(10, "0010_idempotency"),
    migration!(11, "0011_rate_limits"),
    migration!(12, "0012_sms_parts"),
    migration!(13, "0013_inbound_parts"),
    migration!(14, "0014_idempotency_committed"),
    migration!(15, "0015_hot_paths"),
    migration!(16, "0016_auth_version"),
    migration!(17, "0017_smpp_receipts"),
    migration!(18, "0018_phone_code_failures"),
    migration!(19, "0019_quotas"),
    migration!(20, "0020_retention"),
    migration!(21, "0021_call_networks"),
    migration!(22, "0022_sip_trunks"),
    migration!(23, "0023_speech"),
    migration!(24, "0024_console"),
    migration!(25, "0025_runs_recent"),
    migration!(26, "0026_credit_slices"),
    migration!(27, "0027_hot_inserts"),
    migration!(28, "0028_running_runs"),
    migration!(29, "0029_sms_queue"),
    migration!(30, "0030_event_ids_unindexed"),
    migration!(31, "0031_sms_queue_accounts"),
    migration!(32, "0032_events_unindexed_by_account"),
    migration!(33, "0033_sms_queue_on_sms"),
    migration!(34, "0034_deliveries_due_keyset"),
    migration!(35, "0035_deliveries_due_by_account"),
    migration!(36, "0036_sms_state"),
    migration!(37, "0037_feed_watches"),
    migration!(38, "0038_sms_plans"),
    migration!(39, "0039_sms_planned_delivery"),
];

/// Applies every migration not yet applied; returns the versions applied now.
pub async fn run(store: &Store) -> Result<Vec<i64>, DbError> {
    run_to(store, i64::MAX).await
}

/// Applies the migrations not yet applied up to version `last` (a database as an earlier
/// release left it, for tests of the later migrations).
pub async fn run_to(store: &Store, last: i64) -> Result<Vec<i64>, DbError> {
    store.write(move |c| apply(c, last)).await
}

fn apply(conn: &mut dyn Conn, last: i64) -> Result<Vec<i64>, DbError> {
    if conn.dialect() == Dialect::Postgres {
        // Any constant works; it only has to be the same on every node.
        conn.query("SELECT pg_advisory_xact_lock(7361836) IS NULL", params![])?;
    }
    conn.batch(
        "CREATE TABLE IF NOT EXISTS schema_migrations (version BIGINT PRIMARY KEY, name TEXT NOT NULL)",
    )?;
    let done: Vec<i64> = conn
        .query("SELECT version FROM schema_migrations", params![])?
        .iter()
        .map(|r| r.int(0))
        .collect::<Result<_, _>>()?;
    let mut applied = Vec::new();
    for m in MIGRATIONS
        .iter()
        .filter(|m| m.version <= last && !done.contains(&m.version))
    {
        let sql = match conn.dialect() {
            Dialect::Sqlite => m.sqlite,
            Dialect::Postgres => m.postgres,
        };
        conn.batch(sql)
            .map_err(|e| DbError::Other(format!("migration {} failed: {e}", m.name)))?;
        conn.execute(
            "INSERT INTO schema_migrations (version, name) VALUES ($1, $2)",
            params![m.version, m.name],
        )?;
        tracing::info!(version = m.version, name = m.name, "migration applied");
        applied.push(m.version);
    }
    Ok(applied)
}
