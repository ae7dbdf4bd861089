//! The SMS worker's queue: each SMS with a next step, by when it is due (`sms_queue`,
//! migration 0029), written with every change of the SMS's `next_at`.
//!
//! Why apart from `sms`: every status move of an SMS changes when it is next due. Were that
//! time indexed on `sms` itself (as it was), no move could be a HOT update on PostgreSQL: each
//! would write a new entry in every index of the table (five) and leave as many dead. With
//! the due time indexed here only, a move rewrites the SMS's row on its own page with no
//! index entry (the table keeps room for it: `fillfactor`), and its queue row, narrow with two
//! indexes, is what changes index entries. `sms.next_at` stays the SMS's own record of it
//! (`due_among` reads it by primary key); this table is what finds SMS by due time.

use dialtone_domain::Timestamp;

use crate::sql::{Columns, Conn, DbError, Dialect, Value, in_list, row_chunks, values_list};

/// Sets when each SMS is next due (`None`: never, it leaves the queue). An SMS given twice
/// takes its last time.
pub fn set(conn: &mut dyn Conn, due: &[(i64, Option<Timestamp>)]) -> Result<(), DbError> {
    if due.is_empty() {
        return Ok(());
    }
    // One row per SMS (an upsert may not touch a row twice), its last time.
    let mut last: Vec<(i64, Option<Timestamp>)> = Vec::with_capacity(due.len());
    let mut at = std::collections::HashMap::with_capacity(due.len());
    for &(id, time) in due {
        match at.get(&id) {
            Some(&i) => last[i] = (id, time),
            None => {
                at.insert(id, last.len());
                last.push((id, time));
            }
        }
    }
    match conn.dialect() {
        Dialect::Postgres => {
            let columns = Columns::new()
                .int("id", last.iter().map(|&(id, _)| Some(id)))
                .int(
                    "due_at",
                    last.iter().map(|&(_, t)| t.map(Timestamp::millis)),
                );
            let sql = format!(
                "WITH v AS (SELECT * FROM {}), \
                 gone AS (DELETE FROM sms_queue q USING v WHERE q.sms_id = v.id AND v.due_at IS NULL) \
                 INSERT INTO sms_queue (sms_id, due_at) SELECT id, due_at FROM v WHERE due_at IS NOT NULL \
                 ON CONFLICT (sms_id) DO UPDATE SET due_at = EXCLUDED.due_at",
                columns.unnest("u", 1)
            );
            conn.execute(&sql, &columns.into_params())?;
        }
        Dialect::Sqlite => {
            let gone: Vec<i64> = last
                .iter()
                .filter(|(_, t)| t.is_none())
                .map(|&(id, _)| id)
                .collect();
            if !gone.is_empty() {
                let (among, params) = in_list(Dialect::Sqlite, "sms_id", 1, crate::sql::ids(&gone));
                conn.execute(&format!("DELETE FROM sms_queue WHERE {among}"), &params)?;
            }
            let due: Vec<(i64, Timestamp)> = last
                .iter()
                .filter_map(|&(id, t)| t.map(|t| (id, t)))
                .collect();
            for chunk in row_chunks(&due) {
                let sql = format!(
                    "INSERT INTO sms_queue (sms_id, due_at) VALUES {} \
                     ON CONFLICT (sms_id) DO UPDATE SET due_at = excluded.due_at",
                    values_list(chunk.len(), &[crate::sql::Item::Param; 2])
                );
                let params: Vec<Value> = chunk
                    .iter()
                    .flat_map(|&(id, t)| [Value::from(id), Value::from(t)])
                    .collect();
                conn.execute(&sql, &params)?;
            }
        }
    }
    Ok(())
}
