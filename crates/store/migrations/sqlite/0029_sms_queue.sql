-- The SMS worker finds due SMS through a queue of its own (see the PostgreSQL migration of
-- the same name; SQLite has no HOT updates to gain, but one schema serves both).
CREATE TABLE sms_queue (
    sms_id INTEGER PRIMARY KEY,
    due_at INTEGER NOT NULL
);
CREATE INDEX sms_queue_due ON sms_queue(due_at);
INSERT INTO sms_queue (sms_id, due_at) SELECT id, next_at FROM sms WHERE next_at IS NOT NULL;
DROP INDEX sms_due;
