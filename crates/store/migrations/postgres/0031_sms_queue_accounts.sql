-- The SMS worker's queue by account: the worker takes due SMS from every account with some
-- in turn instead of strictly by due time, so one account's backlog no longer holds every
-- other account's SMS behind it (see `sms_queue.rs`). The due index becomes per account:
-- no global walk by due time is left, and each move still changes one index entry.
ALTER TABLE sms_queue ADD COLUMN account_id BIGINT NOT NULL DEFAULT 0;
-- A queue row without its SMS (none is expected) keeps account 0: the claim skips it.
UPDATE sms_queue q SET account_id = sms.account_id FROM sms WHERE sms.id = q.sms_id;
DROP INDEX sms_queue_due;
-- `sms_id` last: SMS due at the same time come in the order they were stored, and the
-- worker's walk reads the index alone (SQLite's index entries end with the row id anyway).
CREATE INDEX sms_queue_account_due ON sms_queue(account_id, due_at, sms_id);
