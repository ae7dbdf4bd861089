CREATE TABLE accounts (
    id INTEGER PRIMARY KEY,
    sid TEXT NOT NULL UNIQUE,
    name TEXT NOT NULL,
    parent_id INTEGER REFERENCES accounts(id),
    status TEXT NOT NULL,
    currency TEXT NOT NULL,
    billing_mode TEXT NOT NULL,
    credit INTEGER NOT NULL DEFAULT 0,
    login TEXT NOT NULL UNIQUE,
    password_hash TEXT NOT NULL,
    created INTEGER NOT NULL,
    updated INTEGER NOT NULL
);
CREATE INDEX accounts_parent ON accounts(parent_id);

CREATE TABLE api_keys (
    id INTEGER PRIMARY KEY,
    account_id INTEGER NOT NULL REFERENCES accounts(id),
    key_id TEXT NOT NULL,
    key_hash TEXT NOT NULL UNIQUE,
    created INTEGER NOT NULL,
    revoked INTEGER
);
CREATE INDEX api_keys_account ON api_keys(account_id, key_id);

CREATE TABLE ledger (
    id INTEGER PRIMARY KEY,
    account_id INTEGER NOT NULL REFERENCES accounts(id),
    amount INTEGER NOT NULL,
    balance_after INTEGER NOT NULL,
    kind TEXT NOT NULL,
    cause TEXT,
    created INTEGER NOT NULL
);
CREATE INDEX ledger_account ON ledger(account_id, id);
