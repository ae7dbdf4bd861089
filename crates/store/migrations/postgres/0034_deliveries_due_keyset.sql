-- Once: `deliveries_due` on `(next_at, id)`, so a page of due deliveries could start after
-- the last (due time, id) of the one before (docs/benchmarks.md, webhook deliveries).
-- Migration 0035, which came right after it, drops that index and builds it on
-- `(account_id, next_at, id)`, so this one now does nothing: a database upgrading past both
-- builds the index once. Databases that ran the old form are unaffected (0035 drops the
-- index whatever its columns).
SELECT 1;
