-- Events are no longer indexed by their event id. Nothing looks an event up by it (the
-- deliveries refer to `events.id`; the webhook header and the console only show it), and
-- it is unique by construction: 19 digits of the clock in nanoseconds and 13 random
-- letters and digits (`events::new_event_id`). The index still cost every event a second
-- B-tree insert: a sixth of the WAL pages each commit wrote under an SMS load, four events
-- per SMS (docs/benchmarks.md).
--
-- SQLite drops a column's UNIQUE only by making the table again. The foreign keys from
-- the deliveries are checked at the commit (`defer_foreign_keys`, which the commit turns
-- off again): dropping the table orphans them for a moment, and putting every row back
-- under its own id makes them whole. The account's foreign key goes, as it went on
-- PostgreSQL (migration 27): accounts are never deleted, and an event takes its account
-- from a row that has one.
PRAGMA defer_foreign_keys = ON;
CREATE TABLE events_kept AS SELECT id, event_id, account_id, type, data, created FROM events;
DROP TABLE events;
CREATE TABLE events (
    id INTEGER PRIMARY KEY,
    event_id TEXT NOT NULL,
    account_id INTEGER NOT NULL,
    type TEXT NOT NULL,
    data TEXT NOT NULL,
    created INTEGER NOT NULL
);
INSERT INTO events (id, event_id, account_id, type, data, created)
    SELECT id, event_id, account_id, type, data, created FROM events_kept ORDER BY id;
DROP TABLE events_kept;
CREATE INDEX events_account_recent ON events(account_id, id);
