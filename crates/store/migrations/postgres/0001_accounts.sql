CREATE TABLE accounts (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    sid TEXT NOT NULL UNIQUE,
    name TEXT NOT NULL,
    parent_id BIGINT REFERENCES accounts(id),
    status TEXT NOT NULL,
    currency TEXT NOT NULL,
    billing_mode TEXT NOT NULL,
    credit BIGINT NOT NULL DEFAULT 0,
    login TEXT NOT NULL UNIQUE,
    password_hash TEXT NOT NULL,
    created BIGINT NOT NULL,
    updated BIGINT NOT NULL
);
CREATE INDEX accounts_parent ON accounts(parent_id);

CREATE TABLE api_keys (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    account_id BIGINT NOT NULL REFERENCES accounts(id),
    key_id TEXT NOT NULL,
    key_hash TEXT NOT NULL UNIQUE,
    created BIGINT NOT NULL,
    revoked BIGINT
);
CREATE INDEX api_keys_account ON api_keys(account_id, key_id);

CREATE TABLE ledger (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    account_id BIGINT NOT NULL REFERENCES accounts(id),
    amount BIGINT NOT NULL,
    balance_after BIGINT NOT NULL,
    kind TEXT NOT NULL,
    cause TEXT,
    created BIGINT NOT NULL
);
CREATE INDEX ledger_account ON ledger(account_id, id);
