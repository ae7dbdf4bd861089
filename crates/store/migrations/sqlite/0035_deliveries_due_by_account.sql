-- A claim of webhook deliveries visits the accounts with pending deliveries in turn and
-- reads a bounded number of each one's due deliveries, oldest first (`deliveries::claim`).
-- Before, it read the due deliveries of every account in one order and left out those of
-- the endpoints at their cap of tries with a filter: each claim made while an endpoint was
-- at its cap read that endpoint's whole backlog to reach the others (19 ms a claim at
-- 100,000 on PostgreSQL, docs/benchmarks.md). The account first in the index gives both the
-- walk of the accounts (one lookup each) and each account's oldest due deliveries.
DROP INDEX deliveries_due;
CREATE INDEX deliveries_due ON deliveries(account_id, next_at, id) WHERE next_at IS NOT NULL;
