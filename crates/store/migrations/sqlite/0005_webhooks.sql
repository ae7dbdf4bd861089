CREATE TABLE webhooks (
    id INTEGER PRIMARY KEY,
    sid TEXT NOT NULL UNIQUE,
    account_id INTEGER NOT NULL REFERENCES accounts(id),
    type TEXT NOT NULL,
    endpoint TEXT NOT NULL,
    status TEXT NOT NULL,
    hmac_secret TEXT,
    hmac_algo TEXT NOT NULL,
    created INTEGER NOT NULL,
    updated INTEGER NOT NULL
);
CREATE INDEX webhooks_fanout ON webhooks(account_id, type, status);

CREATE TABLE deliveries (
    id INTEGER PRIMARY KEY,
    account_id INTEGER NOT NULL REFERENCES accounts(id),
    event_id INTEGER NOT NULL REFERENCES events(id),
    webhook_id INTEGER REFERENCES webhooks(id) ON DELETE CASCADE,
    endpoint TEXT NOT NULL,
    next_try INTEGER NOT NULL DEFAULT 0,
    status TEXT NOT NULL,
    next_at INTEGER,
    created INTEGER NOT NULL,
    updated INTEGER NOT NULL
);
CREATE INDEX deliveries_due ON deliveries(next_at) WHERE next_at IS NOT NULL;
CREATE INDEX deliveries_webhook ON deliveries(webhook_id);

CREATE TABLE delivery_attempts (
    id INTEGER PRIMARY KEY,
    delivery_id INTEGER NOT NULL REFERENCES deliveries(id) ON DELETE CASCADE,
    try INTEGER NOT NULL,
    status_code INTEGER,
    duration_ms INTEGER NOT NULL,
    error TEXT,
    at INTEGER NOT NULL
);
CREATE INDEX delivery_attempts_delivery ON delivery_attempts(delivery_id, id);
