-- Nothing changes on PostgreSQL: its queue stays a table apart from `sms`, so that a status
-- move is a HOT update of the SMS's row (migration 0029). SQLite's queue became the SMS's
-- own `next_at` (see the SQLite migration of the same name).
SELECT 1;
