CREATE TABLE tasks (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    taskid TEXT NOT NULL UNIQUE,
    account_id BIGINT NOT NULL REFERENCES accounts(id),
    type TEXT NOT NULL,
    status TEXT NOT NULL,
    params TEXT NOT NULL,
    cursor BIGINT NOT NULL DEFAULT 0,
    done BIGINT NOT NULL DEFAULT 0,
    total BIGINT NOT NULL DEFAULT 0,
    result TEXT,
    error TEXT,
    cancel_requested BOOLEAN NOT NULL DEFAULT FALSE,
    lease_until BIGINT,
    created BIGINT NOT NULL,
    updated BIGINT NOT NULL
);
CREATE INDEX tasks_due ON tasks(status, lease_until);
CREATE INDEX tasks_account_type ON tasks(account_id, type, created);

CREATE TABLE export_chunks (
    task_id BIGINT NOT NULL REFERENCES tasks(id),
    seq BIGINT NOT NULL,
    data BYTEA NOT NULL,
    PRIMARY KEY (task_id, seq)
);

CREATE TABLE settings (
    name TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

CREATE INDEX calls_account_id ON calls(account_id, direction, id);
