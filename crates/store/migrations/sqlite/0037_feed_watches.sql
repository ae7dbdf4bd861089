-- The accounts a console live feed watches, and until when. An event that no subscription
-- and no per-SMS webhook receives was still written, for the live feeds alone: four rows an
-- SMS on the simulated network, one in the request's own commit and three in the SMS
-- worker's, read by nobody while no console was open; they cost 12% of the SQLite writer's
-- CPU per SMS and of PostgreSQL's (docs/benchmarks.md).
-- Now such an event is written only while a feed watches its account: a node's feed reader
-- writes the watch when a feed joins and renews it while one is open (`console/feed_hub.rs`),
-- and the outbox reads it with the subscriptions (`events::Outbox`). One row an account,
-- kept (a row per account that ever opened the console).
CREATE TABLE feed_watches (
    account_id INTEGER PRIMARY KEY,
    until BIGINT NOT NULL
);
