CREATE TABLE tasks (
    id INTEGER PRIMARY KEY,
    taskid TEXT NOT NULL UNIQUE,
    account_id INTEGER NOT NULL REFERENCES accounts(id),
    type TEXT NOT NULL,
    status TEXT NOT NULL,
    params TEXT NOT NULL,
    cursor INTEGER NOT NULL DEFAULT 0,
    done INTEGER NOT NULL DEFAULT 0,
    total INTEGER NOT NULL DEFAULT 0,
    result TEXT,
    error TEXT,
    cancel_requested INTEGER NOT NULL DEFAULT 0,
    lease_until INTEGER,
    created INTEGER NOT NULL,
    updated INTEGER NOT NULL
);
CREATE INDEX tasks_due ON tasks(status, lease_until);
CREATE INDEX tasks_account_type ON tasks(account_id, type, created);

CREATE TABLE export_chunks (
    task_id INTEGER NOT NULL REFERENCES tasks(id),
    seq INTEGER NOT NULL,
    data BLOB NOT NULL,
    PRIMARY KEY (task_id, seq)
);

CREATE TABLE settings (
    name TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

CREATE INDEX calls_account_id ON calls(account_id, direction, id);
