-- The web console: its sessions (an account's or the operator's, signed in by a cookie
-- whose token is kept here only as a digest, with the CSRF token the page must echo) and
-- the one-time links the first start prints (kind 'link', consumed by their first use).
CREATE TABLE console_sessions (
    id INTEGER PRIMARY KEY,
    token_hash TEXT NOT NULL UNIQUE,
    kind TEXT NOT NULL,
    account_id BIGINT REFERENCES accounts(id),
    csrf TEXT NOT NULL,
    created BIGINT NOT NULL,
    expires BIGINT NOT NULL
);
CREATE INDEX console_sessions_account ON console_sessions(account_id, id);
-- The console's lists page by keyset, newest first.
CREATE INDEX events_account_recent ON events(account_id, id);
CREATE INDEX calls_account_recent ON calls(account_id, id);
-- The webhook deliveries an SMS caused, by the SMS's sid (their order keys begin with it); this replaces
-- the index of pending ones only, which the claim's ordering check also reads.
DROP INDEX deliveries_order;
CREATE INDEX deliveries_subject ON deliveries(order_key, id) WHERE order_key IS NOT NULL;
-- A subscription's deliveries, newest first.
DROP INDEX deliveries_webhook;
CREATE INDEX deliveries_webhook ON deliveries(webhook_id, id);
