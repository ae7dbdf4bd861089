CREATE TABLE end_users (
    id INTEGER PRIMARY KEY,
    sid TEXT NOT NULL UNIQUE,
    account_id INTEGER NOT NULL REFERENCES accounts(id),
    name TEXT NOT NULL,
    created INTEGER NOT NULL,
    updated INTEGER NOT NULL
);
CREATE INDEX end_users_account ON end_users(account_id, updated);
