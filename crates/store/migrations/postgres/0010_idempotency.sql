CREATE TABLE idempotency_keys (
    account_id BIGINT NOT NULL REFERENCES accounts(id),
    key TEXT NOT NULL,
    request_hash TEXT NOT NULL,
    status BIGINT,
    content_type TEXT,
    body BYTEA,
    locked_until BIGINT NOT NULL,
    created BIGINT NOT NULL,
    PRIMARY KEY (account_id, key)
);
CREATE INDEX idempotency_keys_created ON idempotency_keys(created);
