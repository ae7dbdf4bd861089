CREATE TABLE sms (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    sid TEXT NOT NULL UNIQUE,
    account_id BIGINT NOT NULL REFERENCES accounts(id),
    direction TEXT NOT NULL,
    sender TEXT NOT NULL,
    recipient TEXT NOT NULL,
    body TEXT NOT NULL,
    encoding TEXT NOT NULL,
    parts BIGINT NOT NULL,
    traffic_type TEXT,
    status TEXT NOT NULL,
    status_error TEXT NOT NULL DEFAULT '',
    user_data TEXT,
    flash BOOLEAN NOT NULL DEFAULT FALSE,
    webhook_url TEXT,
    billing_debit BIGINT NOT NULL DEFAULT 0,
    carrier TEXT NOT NULL,
    message_ids TEXT,
    next_at BIGINT,
    created BIGINT NOT NULL,
    updated BIGINT NOT NULL,
    sent_at BIGINT,
    delivered_at BIGINT
);
CREATE INDEX sms_created ON sms(account_id, direction, created);
CREATE INDEX sms_recipient ON sms(account_id, direction, recipient, created);
CREATE INDEX sms_due ON sms(next_at) WHERE next_at IS NOT NULL;

CREATE TABLE sms_history (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    sms_id BIGINT NOT NULL REFERENCES sms(id),
    old_status TEXT NOT NULL,
    new_status TEXT NOT NULL,
    at BIGINT NOT NULL
);
CREATE INDEX sms_history_sms ON sms_history(sms_id, id);

CREATE TABLE approved_senders (
    account_id BIGINT NOT NULL REFERENCES accounts(id),
    sender TEXT NOT NULL,
    created BIGINT NOT NULL,
    PRIMARY KEY (account_id, sender)
);

CREATE TABLE rates (
    prefix TEXT PRIMARY KEY,
    label TEXT NOT NULL,
    country TEXT NOT NULL,
    type TEXT NOT NULL,
    sms_price BIGINT NOT NULL,
    call_price_per_minute BIGINT NOT NULL,
    number_monthly_price BIGINT NOT NULL
);
CREATE INDEX rates_label ON rates(label);
