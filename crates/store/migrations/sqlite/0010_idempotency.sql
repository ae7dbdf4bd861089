CREATE TABLE idempotency_keys (
    account_id INTEGER NOT NULL REFERENCES accounts(id),
    key TEXT NOT NULL,
    request_hash TEXT NOT NULL,
    status INTEGER,
    content_type TEXT,
    body BLOB,
    locked_until INTEGER NOT NULL,
    created INTEGER NOT NULL,
    PRIMARY KEY (account_id, key)
);
CREATE INDEX idempotency_keys_created ON idempotency_keys(created);
