-- Events are no longer indexed by account. The index served only the console's live feed,
-- each open feed reading its account's new events every half second; one reader a node
-- now reads every new event by its key, once a poll, and hands each open feed its
-- account's (`console/feed_hub.rs`). The index cost every event a B-tree insert at the
-- end of its account's range: with many accounts sending, a leaf page per account in each
-- commit, a third of the WAL pages each commit wrote with 100 accounts (docs/benchmarks.md).
DROP INDEX IF EXISTS events_account_recent;
