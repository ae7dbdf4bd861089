-- Per-account request rate limits set by the operator; NULL means the node's default.
ALTER TABLE accounts ADD COLUMN rate_limit BIGINT;
ALTER TABLE accounts ADD COLUMN rate_burst BIGINT;
