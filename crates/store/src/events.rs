//! The outbox: events are written in the same transaction as the change that causes them,
//! so there is no change without its events and no event without its change.

use std::collections::HashMap;

use dialtone_domain::Timestamp;

use crate::params;
use crate::sql::{Conn, DbError, Dialect, Value};

/// A new event id, 32 characters shaped like the real service's (`9422146236497234056PGNSmlw2sOrjq`):
/// 19 digits of the wall clock in nanoseconds, then 13 random letters and digits.
///
/// The time prefix keeps the ids in the order they are made; the random part keeps them
/// unique across nodes and unguessable. Unique by construction, they are not indexed
/// (migration 0030): nothing looks an event up by its id.
pub fn new_event_id() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    // 19 digits until the year 2286; the modulo keeps the width fixed after that.
    format!(
        "{:019}{}",
        nanos % 10_u128.pow(19),
        dialtone_domain::credentials::random_base62(13)
    )
}

/// Records an event of `event_type` for the account (`data` is the JSON object pushed) and,
/// in the same transaction, one delivery per enabled subscription to that type. Returns the
/// event id.
pub fn emit(
    conn: &mut dyn Conn,
    account_id: i64,
    event_type: &str,
    data: &str,
    now: Timestamp,
) -> Result<String, DbError> {
    emit_to(conn, account_id, event_type, data, None, now)
}

/// Like [`emit`], also delivering to `extra_endpoint` (a per-SMS webhook, `hook_hash` null).
pub fn emit_to(
    conn: &mut dyn Conn,
    account_id: i64,
    event_type: &str,
    data: &str,
    extra_endpoint: Option<&str>,
    now: Timestamp,
) -> Result<String, DbError> {
    let event_id = new_event_id();
    let id = conn
        .insert_id(
            "INSERT INTO events (event_id, account_id, type, data, created) VALUES ($1, $2, $3, $4, $5)",
            params![&event_id, account_id, event_type, data, now],
        )?
        .ok_or_else(|| DbError::Other("an event insert wrote no row".to_owned()))?;
    match conn.dialect() {
        // One statement, one round trip.
        Dialect::Postgres => {
            conn.execute(
                "INSERT INTO deliveries (account_id, event_id, webhook_id, endpoint, next_try, status, next_at, created, updated) \
                 SELECT account_id, $1, id, endpoint, 0, 'pending', $2, $2, $2 FROM webhooks \
                 WHERE account_id = $3 AND type = $4 AND status = 'enabled'",
                params![id, now, account_id, event_type],
            )?;
        }
        // The subscriptions are read first and each delivery inserted alone: an
        // `INSERT ... SELECT` would make SQLite keep a statement journal for every event.
        Dialect::Sqlite => {
            for (hook, endpoint) in subscriptions(conn, account_id, event_type)? {
                insert_delivery(conn, account_id, id, Some(hook), &endpoint, now)?;
            }
        }
    }
    if let Some(endpoint) = extra_endpoint {
        insert_delivery(conn, account_id, id, None, endpoint, now)?;
    }
    Ok(event_id)
}

/// The enabled subscriptions of an account to an event type: (webhook id, endpoint).
fn subscriptions(
    conn: &mut dyn Conn,
    account_id: i64,
    event_type: &str,
) -> Result<Vec<(i64, String)>, DbError> {
    conn.query(
        "SELECT id, endpoint FROM webhooks WHERE account_id = $1 AND type = $2 AND status = 'enabled'",
        params![account_id, event_type],
    )?
    .iter()
    .map(|hook| Ok((hook.int(0)?, hook.text(1)?)))
    .collect()
}

/// An event waiting in an [`Outbox`].
struct Queued {
    event_id: String,
    account_id: i64,
    event_type: &'static str,
    data: String,
    extra_endpoint: Option<String>,
    order: Option<String>,
    created: Timestamp,
}

/// Events of a transaction that records many (the SMS worker's status moves), written
/// together by [`Outbox::flush`]: the events and their deliveries a few rows to a statement,
/// each account's subscriptions to a type read once. On PostgreSQL that is a few round trips
/// for a batch instead of two per event. Only for one transaction: flushed before it
/// commits, and no subscription changes meanwhile.
///
/// An event that no subscription and no extra endpoint receives is written only while a
/// console live feed watches its account (`feed_watches`, read with the subscriptions):
/// deliveries are made with their event and never later, so such an event has no reader
/// but the feeds, and nothing is written for nobody (migration 0037).
#[derive(Default)]
pub struct Outbox {
    queued: Vec<Queued>,
    hooks: HashMap<(i64, &'static str), Vec<(i64, String)>>,
    /// Until when a console feed watches each account, among those whose subscriptions were
    /// read (an account read and not here has no watch).
    watched: HashMap<i64, Timestamp>,
}

/// Records that a console live feed of the account is open, or was until a moment ago,
/// until `until`: its account's events are written until then even when nobody receives
/// them (see [`Outbox`]). A watch is only ever lengthened.
pub fn watch(conn: &mut dyn Conn, account_id: i64, until: Timestamp) -> Result<(), DbError> {
    let later = match conn.dialect() {
        Dialect::Postgres => "GREATEST(feed_watches.until, excluded.until)",
        Dialect::Sqlite => "max(feed_watches.until, excluded.until)",
    };
    conn.execute(
        &format!(
            "INSERT INTO feed_watches (account_id, until) VALUES ($1, $2) \
             ON CONFLICT (account_id) DO UPDATE SET until = {later}"
        ),
        params![account_id, until],
    )?;
    Ok(())
}

/// Until when a console live feed watches the account (`None`: it never did).
pub fn watched_until(conn: &mut dyn Conn, account_id: i64) -> Result<Option<Timestamp>, DbError> {
    conn.query_opt(
        "SELECT until FROM feed_watches WHERE account_id = $1",
        params![account_id],
    )?
    .map(|r| r.timestamp(0))
    .transpose()
}

impl Outbox {
    /// Queues an event of `event_type` for the account, also to be delivered to
    /// `extra_endpoint`; returns its id. It is written by [`Outbox::flush`].
    ///
    /// Events pushed with the same `order` key (the SMS they are about) reach each
    /// destination one after the other: a delivery waits while an earlier one of the same key
    /// to the same destination is still pending (neither delivered nor dead).
    pub fn push(
        &mut self,
        account_id: i64,
        event_type: &'static str,
        data: String,
        extra_endpoint: Option<&str>,
        order: Option<&str>,
        now: Timestamp,
    ) -> String {
        let event_id = new_event_id();
        self.queued.push(Queued {
            event_id: event_id.clone(),
            account_id,
            event_type,
            data,
            extra_endpoint: extra_endpoint.map(str::to_owned),
            order: order.map(str::to_owned),
            created: now,
        });
        event_id
    }

    /// Writes the queued events and their deliveries (one per enabled subscription of its
    /// account to its type, and one to its extra endpoint).
    pub fn flush(&mut self, conn: &mut dyn Conn) -> Result<(), DbError> {
        let mut queued = std::mem::take(&mut self.queued);
        self.read_hooks(conn, &queued)?;
        queued.retain(|e| {
            self.records(
                e.account_id,
                e.event_type,
                e.extra_endpoint.as_deref(),
                e.created,
            )
        });
        // The events' ids are read back only when a delivery refers to one: without
        // `RETURNING`, SQLite neither collects the rows in a temporary table nor keeps a
        // statement journal for the insert.
        let delivered = queued.iter().any(|e| {
            self.delivers(e.account_id, e.event_type, e.extra_endpoint.as_deref()) == Some(true)
        });
        if !delivered {
            insert_events(conn, &queued, false)?;
            return Ok(());
        }
        let ids = insert_events(conn, &queued, true)?;
        let mut deliveries: Vec<NewDelivery<'_>> = Vec::new();
        for e in &queued {
            let id = *ids
                .get(e.event_id.as_str())
                .ok_or_else(|| DbError::Other("an event insert wrote no row".to_owned()))?;
            let key = (e.account_id, e.event_type);
            for (hook, endpoint) in self.hooks.get(&key).into_iter().flatten() {
                let order = e.order.as_ref().map(|o| format!("{o}/{hook}"));
                deliveries.push((e.account_id, id, Some(*hook), endpoint, order, e.created));
            }
            if let Some(endpoint) = &e.extra_endpoint {
                // One extra endpoint per key (an SMS's own webhook).
                let order = e.order.as_ref().map(|o| format!("{o}/own"));
                deliveries.push((e.account_id, id, None, endpoint, order, e.created));
            }
        }
        insert_deliveries(conn, &deliveries)
    }

    /// Reads the enabled subscriptions of the accounts of `queued` not read yet, every
    /// account's in one statement (a batch of SMS moves may hold many accounts).
    fn read_hooks(&mut self, conn: &mut dyn Conn, queued: &[Queued]) -> Result<(), DbError> {
        let keys: Vec<(i64, &'static str)> = queued
            .iter()
            .map(|e| (e.account_id, e.event_type))
            .collect();
        self.read_missing(conn, &keys)
    }

    /// Reads the subscriptions of `accounts` to `event_type` (and whether a console feed
    /// watches them) before their events are made, so that [`Outbox::delivers`] and
    /// [`Outbox::records`] can tell which events someone receives and which are written at
    /// all: an event nobody receives needs no payload, and is not written unless a feed
    /// watches (see `sms::events` in the server).
    pub fn read_hooks_of(
        &mut self,
        conn: &mut dyn Conn,
        accounts: impl IntoIterator<Item = i64>,
        event_type: &'static str,
    ) -> Result<(), DbError> {
        let keys: Vec<(i64, &'static str)> =
            accounts.into_iter().map(|a| (a, event_type)).collect();
        self.read_missing(conn, &keys)
    }

    /// Whether an event of `event_type` for the account (with `extra_endpoint`, an SMS's own
    /// webhook) will be delivered anywhere when this outbox is flushed; `None` when the
    /// account's subscriptions to that type were not read yet (then it may be).
    pub fn delivers(
        &self,
        account_id: i64,
        event_type: &'static str,
        extra_endpoint: Option<&str>,
    ) -> Option<bool> {
        if extra_endpoint.is_some() {
            return Some(true);
        }
        self.hooks
            .get(&(account_id, event_type))
            .map(|hooks| !hooks.is_empty())
    }

    /// Whether an event of `event_type` for the account made at `at` will be written when
    /// this outbox is flushed: when someone receives it, or a console feed watches the
    /// account then, or the account's subscriptions were not read yet (then it may be
    /// received). Else nothing could ever read it, and it is left out.
    pub fn records(
        &self,
        account_id: i64,
        event_type: &'static str,
        extra_endpoint: Option<&str>,
        at: Timestamp,
    ) -> bool {
        match self.delivers(account_id, event_type, extra_endpoint) {
            Some(true) | None => true,
            Some(false) => self
                .watched
                .get(&account_id)
                .is_some_and(|until| *until > at),
        }
    }

    /// Reads the enabled subscriptions of the (account, type) `keys` not read yet, and the
    /// console feeds' watches of their accounts, in one statement for all of them.
    fn read_missing(
        &mut self,
        conn: &mut dyn Conn,
        keys: &[(i64, &'static str)],
    ) -> Result<(), DbError> {
        let unread = || keys.iter().filter(|k| !self.hooks.contains_key(k));
        let mut accounts: Vec<i64> = unread().map(|k| k.0).collect();
        if accounts.is_empty() {
            return Ok(());
        }
        accounts.sort_unstable();
        accounts.dedup();
        let mut types: Vec<&str> = unread().map(|k| k.1).collect();
        types.sort_unstable();
        types.dedup();
        let types =
            crate::sql::Array::Text(types.into_iter().map(|t| Some(t.to_owned())).collect());
        let (among, mut params) =
            crate::sql::in_list(conn.dialect(), "account_id", 1, crate::sql::ids(&accounts));
        let (of_types, more) = crate::sql::in_list(conn.dialect(), "type", params.len() + 1, types);
        params.extend(more);
        let (watched_among, more) = crate::sql::in_list(
            conn.dialect(),
            "account_id",
            params.len() + 1,
            crate::sql::ids(&accounts),
        );
        params.extend(more);
        let mut found: HashMap<(i64, String), Vec<(i64, String)>> = HashMap::new();
        // A watch's row has no type: its third column is the watch's end.
        for r in conn.query(
            &format!(
                "SELECT account_id, type, id, endpoint FROM webhooks \
                 WHERE {among} AND {of_types} AND status = 'enabled' \
                 UNION ALL SELECT account_id, NULL, until, NULL FROM feed_watches WHERE {watched_among} \
                 ORDER BY id"
            ),
            &params,
        )? {
            let account = r.int(0)?;
            match r.opt_text(1)? {
                Some(event_type) => found
                    .entry((account, event_type))
                    .or_default()
                    .push((r.int(2)?, r.text(3)?)),
                None => {
                    self.watched.insert(account, r.timestamp(2)?);
                }
            }
        }
        for &(account, event_type) in keys {
            if let std::collections::hash_map::Entry::Vacant(slot) =
                self.hooks.entry((account, event_type))
            {
                slot.insert(
                    found
                        .remove(&(account, event_type.to_owned()))
                        .unwrap_or_default(),
                );
            }
        }
        Ok(())
    }
}

/// (account, event, webhook, endpoint, order key, created) of a delivery to make.
type NewDelivery<'a> = (i64, i64, Option<i64>, &'a str, Option<String>, Timestamp);

/// Inserts queued events, in their order; with `returning`, gives the id each was stored
/// under, by event id (else an empty map). PostgreSQL: one statement (the columns bound as
/// arrays); SQLite: several rows to a statement.
fn insert_events(
    conn: &mut dyn Conn,
    queued: &[Queued],
    returning: bool,
) -> Result<HashMap<String, i64>, DbError> {
    use crate::sql::{Columns, Item, row_chunks, values_list};
    let mut ids: HashMap<String, i64> = HashMap::with_capacity(queued.len());
    if queued.is_empty() {
        return Ok(ids);
    }
    let returning_ids = if returning {
        " RETURNING event_id, id"
    } else {
        ""
    };
    if conn.dialect() == Dialect::Postgres {
        let columns = Columns::new()
            .text("event_id", queued.iter().map(|e| Some(e.event_id.clone())))
            .int("account_id", queued.iter().map(|e| Some(e.account_id)))
            .text("type", queued.iter().map(|e| Some(e.event_type.to_owned())))
            .text("data", queued.iter().map(|e| Some(e.data.clone())))
            .int("created", queued.iter().map(|e| Some(e.created.millis())));
        let sql = format!(
            "INSERT INTO events (event_id, account_id, type, data, created) \
             SELECT event_id, account_id, type, data, created FROM {} ORDER BY ord{returning_ids}",
            columns.unnest_ordered("e", 1)
        );
        run_insert(conn, &sql, &columns.into_params(), returning, &mut ids)?;
        return Ok(ids);
    }
    for chunk in row_chunks(queued) {
        let sql = format!(
            "INSERT INTO events (event_id, account_id, type, data, created) VALUES {}{returning_ids}",
            values_list(chunk.len(), &[Item::Param; 5])
        );
        let mut params = Vec::with_capacity(chunk.len() * 5);
        for e in chunk {
            params.extend([
                e.event_id.as_str().into(),
                e.account_id.into(),
                e.event_type.into(),
                e.data.as_str().into(),
                e.created.into(),
            ]);
        }
        run_insert(conn, &sql, &params, returning, &mut ids)?;
    }
    Ok(ids)
}

/// Runs one insert of events; with `returning` (its `RETURNING event_id, id`), notes the id
/// of each row in `ids`.
fn run_insert(
    conn: &mut dyn Conn,
    sql: &str,
    params: &[crate::Value],
    returning: bool,
    ids: &mut HashMap<String, i64>,
) -> Result<(), DbError> {
    if !returning {
        conn.execute(sql, params)?;
        return Ok(());
    }
    for row in conn.query(sql, params)? {
        ids.insert(row.text(0)?, row.int(1)?);
    }
    Ok(())
}

/// Inserts new deliveries, `pending` and due at once, in their order: PostgreSQL in one
/// statement, SQLite several to a statement.
fn insert_deliveries(conn: &mut dyn Conn, deliveries: &[NewDelivery<'_>]) -> Result<(), DbError> {
    use crate::sql::{Columns, Item, row_chunks, values_list};
    if deliveries.is_empty() {
        return Ok(());
    }
    if conn.dialect() == Dialect::Postgres {
        let columns = Columns::new()
            .int("account_id", deliveries.iter().map(|d| Some(d.0)))
            .int("event_id", deliveries.iter().map(|d| Some(d.1)))
            .int("webhook_id", deliveries.iter().map(|d| d.2))
            .text("endpoint", deliveries.iter().map(|d| Some(d.3.to_owned())))
            .text("order_key", deliveries.iter().map(|d| d.4.clone()))
            .int("at", deliveries.iter().map(|d| Some(d.5.millis())));
        let sql = format!(
            "INSERT INTO deliveries (account_id, event_id, webhook_id, endpoint, next_try, status, next_at, created, updated, order_key) \
             SELECT account_id, event_id, webhook_id, endpoint, 0, 'pending', at, at, at, order_key FROM {} ORDER BY ord",
            columns.unnest_ordered("d", 1)
        );
        conn.execute(&sql, &columns.into_params())?;
        return Ok(());
    }
    let items = [
        Item::Param,
        Item::Param,
        Item::Param,
        Item::Param,
        Item::Const("0"),
        Item::Const("'pending'"),
        Item::Param,
        Item::Param,
        Item::Param,
        Item::Param,
    ];
    for chunk in row_chunks(deliveries) {
        let sql = format!(
            "INSERT INTO deliveries (account_id, event_id, webhook_id, endpoint, next_try, status, next_at, created, updated, order_key) VALUES {}",
            values_list(chunk.len(), &items)
        );
        let mut params = Vec::with_capacity(chunk.len() * 8);
        for (account, event, hook, endpoint, order, at) in chunk {
            params.extend([
                (*account).into(),
                (*event).into(),
                (*hook).into(),
                (*endpoint).into(),
                (*at).into(),
                (*at).into(),
                (*at).into(),
                order.clone().map_or(crate::sql::Value::Null, Into::into),
            ]);
        }
        conn.execute(&sql, &params)?;
    }
    Ok(())
}

fn insert_delivery(
    conn: &mut dyn Conn,
    account_id: i64,
    event: i64,
    webhook: Option<i64>,
    endpoint: &str,
    now: Timestamp,
) -> Result<(), DbError> {
    conn.execute(
        "INSERT INTO deliveries (account_id, event_id, webhook_id, endpoint, next_try, status, next_at, created, updated) \
         VALUES ($1, $2, $3, $4, 0, 'pending', $5, $5, $5)",
        params![account_id, event, webhook, endpoint, now],
    )?;
    Ok(())
}

/// An event as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredEvent {
    /// Unique id.
    pub event_id: String,
    /// Event name, e.g. `did.assigned`.
    pub event_type: String,
    /// JSON object pushed.
    pub data: String,
    /// When it happened.
    pub created: Timestamp,
}

/// The account's events, oldest first (for tests and diagnostics). Events are not indexed
/// by account (migration 0032): this reads the whole table.
pub fn list(conn: &mut dyn Conn, account_id: i64) -> Result<Vec<StoredEvent>, DbError> {
    conn.query(
        "SELECT event_id, type, data, created FROM events WHERE account_id = $1 ORDER BY id",
        params![account_id],
    )?
    .iter()
    .map(|r| {
        Ok(StoredEvent {
            event_id: r.text(0)?,
            event_type: r.text(1)?,
            data: r.text(2)?,
            created: r.timestamp(3)?,
        })
    })
    .collect()
}

/// An event as the console's live feeds send it.
#[derive(Debug, Clone)]
pub struct FeedEvent {
    /// Internal key: the feeds' position.
    pub id: i64,
    /// The account it belongs to.
    pub account_id: i64,
    /// Event name.
    pub event_type: String,
    /// JSON object pushed.
    pub data: String,
}

/// The position of the newest event of every account (0 without any): where a live feed
/// that does not resume starts.
pub fn newest_position(conn: &mut dyn Conn) -> Result<i64, DbError> {
    Ok(conn
        .query_opt("SELECT max(id) FROM events", params![])?
        .map(|r| r.opt_int(0))
        .transpose()?
        .flatten()
        .unwrap_or(0))
}

/// The newest `limit` events of `accounts` at positions in `(after, upto]`, oldest first.
///
/// A range of the primary key, every account's events in it read and those of other
/// accounts left: the caller bounds the range (`upto - after`), which bounds the rows read
/// whatever the accounts. Events have no index by account (migration 0032): one reader a
/// node serves every open feed from a read like this one. The newest, not the oldest: a
/// feed tells the console that something changed, and under a flood the latest change is
/// the one to show.
pub fn among(
    conn: &mut dyn Conn,
    after: i64,
    upto: i64,
    accounts: &[i64],
    limit: usize,
) -> Result<Vec<FeedEvent>, DbError> {
    if accounts.is_empty() || upto <= after {
        return Ok(Vec::new());
    }
    let (among, mut params) =
        crate::sql::in_list(conn.dialect(), "account_id", 3, crate::sql::ids(accounts));
    params.splice(0..0, [Value::from(after), Value::from(upto)]);
    conn.query(
        &format!(
            "SELECT id, account_id, type, data FROM events \
             WHERE id > $1 AND id <= $2 AND {among} ORDER BY id DESC LIMIT {}",
            limit.clamp(1, 10_000)
        ),
        &params,
    )?
    .iter()
    .rev()
    .map(|r| {
        Ok(FeedEvent {
            id: r.int(0)?,
            account_id: r.int(1)?,
            event_type: r.text(2)?,
            data: r.text(3)?,
        })
    })
    .collect()
}

#[cfg(test)]
mod tests {
    use super::new_event_id;

    #[test]
    fn event_ids_have_the_real_shape_and_sort_by_creation() {
        let first = new_event_id();
        let second = new_event_id();
        for id in [&first, &second] {
            assert_eq!(id.len(), 32, "{id}");
            assert!(id[..19].bytes().all(|b| b.is_ascii_digit()), "{id}");
            assert!(id[19..].bytes().all(|b| b.is_ascii_alphanumeric()), "{id}");
        }
        assert!(first[..19] <= second[..19], "{first} then {second}");
        assert_ne!(first, second);
    }
}
