-- The delivery worker reads due deliveries a page at a time, oldest first, each page after
-- the last (due time, id) of the one before. With the due time alone indexed, a page after
-- the first could not start where the last ended: its condition on the id was a filter, and
-- each such page read every due delivery before it again, a whole backlog per claim when
-- one endpoint's tries were at their cap (docs/benchmarks.md, webhook deliveries). The id
-- in the index makes the row comparison `(next_at, id) > (a, b)` the start of the scan.
DROP INDEX deliveries_due;
CREATE INDEX deliveries_due ON deliveries(next_at, id) WHERE next_at IS NOT NULL;
