-- An SMS's moving state apart from what it carries (see `sms.rs`, docs/benchmarks.md).
-- Each status move rewrote the whole `sms` row (a HOT update, 17 us and 390 bytes of WAL a
-- row under load) and then upserted the SMS's queue row (11 us: a new version with an entry
-- in each of its two indexes, its due time being indexed): two row versions a move, four
-- moves an SMS. Now the moving state (status, when next due, times, history, the network's
-- ids) is a narrow row of its own that is also the queue: a move writes that one row, with
-- its two index entries, and nothing else. What the SMS carries (sender, recipient, text,
-- account, network, price) stays in `sms_message`, written once.
--
-- `sms` becomes a view joining the two by key, so every reader keeps its statement; the
-- writers write the tables. `sms_queue` becomes a view of the state's due time over a partial
-- index by account, as SQLite's is of `sms.next_at` (migration 0033), so the worker's walk
-- keeps its statements too. No foreign key between the two tables: the statements that
-- write an SMS write both in one statement, and those that delete one delete both.
CREATE TABLE sms_state (
    sms_id BIGINT PRIMARY KEY,
    account_id BIGINT NOT NULL,
    status TEXT NOT NULL,
    status_error TEXT NOT NULL DEFAULT '',
    message_ids TEXT,
    next_at BIGINT,
    updated BIGINT NOT NULL,
    sent_at BIGINT,
    delivered_at BIGINT,
    history TEXT NOT NULL DEFAULT ''
) WITH (fillfactor = 50);
-- `fillfactor`: half of each page left free so that a move's new version lands on its
-- row's own page (measured: a move 5% cheaper than on full pages).
INSERT INTO sms_state (sms_id, account_id, status, status_error, message_ids, next_at, updated,
                       sent_at, delivered_at, history)
SELECT id, account_id, status, status_error, message_ids, next_at, updated, sent_at,
       delivered_at, history
FROM sms ORDER BY id;
CREATE INDEX sms_state_due ON sms_state(account_id, next_at, sms_id) WHERE next_at IS NOT NULL;
DROP TABLE sms_queue;
ALTER TABLE sms DROP COLUMN status, DROP COLUMN status_error, DROP COLUMN message_ids,
    DROP COLUMN next_at, DROP COLUMN updated, DROP COLUMN sent_at, DROP COLUMN delivered_at,
    DROP COLUMN history;
ALTER TABLE sms RENAME TO sms_message;
ALTER SEQUENCE sms_id_seq RENAME TO sms_message_id_seq;
-- Written once, changed only when its network goes away (`set_carrier`): full pages.
ALTER TABLE sms_message SET (fillfactor = 100);
CREATE VIEW sms AS
SELECT m.id, m.sid, m.account_id, m.direction, m.sender, m.recipient, m.body, m.encoding, m.parts,
       m.traffic_type, s.status, s.status_error, m.user_data, m.flash, m.webhook_url,
       m.billing_debit, m.carrier, s.message_ids, s.next_at, m.created, s.updated, s.sent_at,
       s.delivered_at, s.history
FROM sms_message m JOIN sms_state s ON s.sms_id = m.id;
CREATE VIEW sms_queue AS
SELECT sms_id, account_id, next_at AS due_at FROM sms_state WHERE next_at IS NOT NULL;
ANALYZE sms_state;
