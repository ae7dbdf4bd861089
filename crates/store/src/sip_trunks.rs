//! SIP trunks added by the operator (`/admin/sip`): their configuration as JSON, by name.

use dialtone_domain::Timestamp;

use crate::params;
use crate::sql::{Conn, DbError};

/// Every stored trunk: name and configuration (JSON), oldest first.
pub fn all(conn: &mut dyn Conn) -> Result<Vec<(String, String)>, DbError> {
    conn.query(
        "SELECT name, config FROM sip_trunks ORDER BY created, name",
        params![],
    )?
    .iter()
    .map(|r| Ok((r.text(0)?, r.text(1)?)))
    .collect()
}

/// Stores a trunk; false when the name is taken.
pub fn add(conn: &mut dyn Conn, name: &str, config: &str, now: Timestamp) -> Result<bool, DbError> {
    Ok(conn.execute(
        "INSERT INTO sip_trunks (name, config, created) VALUES ($1, $2, $3) ON CONFLICT (name) DO NOTHING",
        params![name, config, now],
    )? > 0)
}

/// Forgets a trunk; false when there was none of that name.
pub fn remove(conn: &mut dyn Conn, name: &str) -> Result<bool, DbError> {
    Ok(conn.execute("DELETE FROM sip_trunks WHERE name = $1", params![name])? > 0)
}
