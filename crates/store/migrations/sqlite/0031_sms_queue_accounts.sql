-- The SMS worker's queue by account: the worker takes due SMS from every account with some
-- in turn instead of strictly by due time, so one account's backlog no longer holds every
-- other account's SMS behind it (see `sms_queue.rs`). The due index becomes per account:
-- no global walk by due time is left, and each move still changes one index entry.
ALTER TABLE sms_queue ADD COLUMN account_id INTEGER NOT NULL DEFAULT 0;
-- A queue row without its SMS (none is expected) keeps account 0: the claim skips it.
UPDATE sms_queue SET account_id = COALESCE((SELECT account_id FROM sms WHERE sms.id = sms_queue.sms_id), 0);
DROP INDEX sms_queue_due;
CREATE INDEX sms_queue_account_due ON sms_queue(account_id, due_at);
