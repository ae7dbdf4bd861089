CREATE TABLE end_users (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    sid TEXT NOT NULL UNIQUE,
    account_id BIGINT NOT NULL REFERENCES accounts(id),
    name TEXT NOT NULL,
    created BIGINT NOT NULL,
    updated BIGINT NOT NULL
);
CREATE INDEX end_users_account ON end_users(account_id, updated);
