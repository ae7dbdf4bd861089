CREATE TABLE webhooks (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    sid TEXT NOT NULL UNIQUE,
    account_id BIGINT NOT NULL REFERENCES accounts(id),
    type TEXT NOT NULL,
    endpoint TEXT NOT NULL,
    status TEXT NOT NULL,
    hmac_secret TEXT,
    hmac_algo TEXT NOT NULL,
    created BIGINT NOT NULL,
    updated BIGINT NOT NULL
);
CREATE INDEX webhooks_fanout ON webhooks(account_id, type, status);

CREATE TABLE deliveries (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    account_id BIGINT NOT NULL REFERENCES accounts(id),
    event_id BIGINT NOT NULL REFERENCES events(id),
    webhook_id BIGINT REFERENCES webhooks(id) ON DELETE CASCADE,
    endpoint TEXT NOT NULL,
    next_try BIGINT NOT NULL DEFAULT 0,
    status TEXT NOT NULL,
    next_at BIGINT,
    created BIGINT NOT NULL,
    updated BIGINT NOT NULL
);
CREATE INDEX deliveries_due ON deliveries(next_at) WHERE next_at IS NOT NULL;
CREATE INDEX deliveries_webhook ON deliveries(webhook_id);

CREATE TABLE delivery_attempts (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    delivery_id BIGINT NOT NULL REFERENCES deliveries(id) ON DELETE CASCADE,
    try BIGINT NOT NULL,
    status_code BIGINT,
    duration_ms BIGINT NOT NULL,
    error TEXT,
    at BIGINT NOT NULL
);
CREATE INDEX delivery_attempts_delivery ON delivery_attempts(delivery_id, id);
