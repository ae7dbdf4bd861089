-- The SMS worker finds due SMS through a queue of its own instead of an index on `sms`
-- (see `sms_queue.rs`). Every status move changes when an SMS is next due: indexed on `sms`,
-- that made each move rewrite the SMS's row with a new entry in each of its five indexes.
-- With the due time indexed only here, a move is a HOT update of the SMS's row (no index
-- entry), given room on its page: `fillfactor` leaves half of each new page free, so the
-- moves of the SMS stored together (one page, moved together) fit beside them; pruning
-- frees the old versions between moves. `sms.next_at` stays the SMS's own record.
CREATE TABLE sms_queue (
    sms_id BIGINT PRIMARY KEY,
    due_at BIGINT NOT NULL
);
CREATE INDEX sms_queue_due ON sms_queue(due_at);
INSERT INTO sms_queue (sms_id, due_at) SELECT id, next_at FROM sms WHERE next_at IS NOT NULL;
DROP INDEX sms_due;
ALTER TABLE sms SET (fillfactor = 50);
