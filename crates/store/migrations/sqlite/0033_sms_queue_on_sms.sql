-- On SQLite the SMS worker's queue is the SMS's own `next_at`, indexed by account: the
-- queue table of migrations 0029 and 0031 was kept apart from `sms` for PostgreSQL's HOT
-- updates, which SQLite does not have. Here every status move rewrote the SMS's row and then
-- upserted its queue row (a second table B-tree, its index, and a statement of its own),
-- about a tenth of the writer's time and of the pages each commit wrote under an SMS load
-- (docs/benchmarks.md). The index below takes the queue index's place (a move changes one
-- entry of it, as it changed one of `sms_queue_account_due`), and the view keeps the
-- queue's name and columns for the walk and every other reader. The index is partial: an
-- SMS with no next step is in neither.
DROP TABLE sms_queue;
CREATE INDEX sms_due_by_account ON sms(account_id, next_at) WHERE next_at IS NOT NULL;
CREATE VIEW sms_queue (sms_id, account_id, due_at) AS
    SELECT id, account_id, next_at FROM sms INDEXED BY sms_due_by_account
    WHERE next_at IS NOT NULL;
