CREATE TABLE runs (
    id INTEGER PRIMARY KEY,
    sid TEXT NOT NULL UNIQUE,
    account_id INTEGER NOT NULL REFERENCES accounts(id),
    scenario_sid TEXT NOT NULL,
    scenario_name TEXT NOT NULL,
    script TEXT NOT NULL,
    type TEXT NOT NULL,
    status TEXT NOT NULL,
    state TEXT,
    variables TEXT NOT NULL DEFAULT '{}',
    log TEXT NOT NULL DEFAULT '[]',
    error TEXT,
    call_id INTEGER,
    pending TEXT NOT NULL DEFAULT '[]',
    version INTEGER NOT NULL DEFAULT 0,
    next_at INTEGER,
    started INTEGER NOT NULL,
    ended INTEGER,
    updated INTEGER NOT NULL
);
CREATE INDEX runs_account ON runs(account_id, scenario_sid);
CREATE INDEX runs_due ON runs(next_at) WHERE next_at IS NOT NULL;
CREATE INDEX runs_call ON runs(call_id) WHERE call_id IS NOT NULL;

CREATE TABLE calls (
    id INTEGER PRIMARY KEY,
    callid TEXT NOT NULL UNIQUE,
    account_id INTEGER NOT NULL REFERENCES accounts(id),
    direction TEXT NOT NULL,
    caller TEXT NOT NULL,
    callee TEXT NOT NULL,
    number TEXT,
    scenario_sid TEXT,
    status TEXT NOT NULL,
    started INTEGER NOT NULL,
    answered INTEGER,
    ended INTEGER,
    hangup_cause INTEGER,
    hangup_source TEXT,
    billing_debit INTEGER NOT NULL DEFAULT 0,
    parent_id INTEGER REFERENCES calls(id),
    dtmf TEXT NOT NULL DEFAULT '',
    audio BLOB,
    updated INTEGER NOT NULL
);
CREATE INDEX calls_account_started ON calls(account_id, direction, started);

CREATE TABLE call_timeline (
    id INTEGER PRIMARY KEY,
    call_id INTEGER NOT NULL REFERENCES calls(id),
    at INTEGER NOT NULL,
    kind TEXT NOT NULL,
    data TEXT NOT NULL
);
CREATE INDEX call_timeline_call ON call_timeline(call_id, id);

CREATE TABLE recordings (
    id INTEGER PRIMARY KEY,
    sid TEXT NOT NULL UNIQUE,
    account_id INTEGER NOT NULL REFERENCES accounts(id),
    type TEXT NOT NULL,
    caller TEXT NOT NULL,
    callee TEXT NOT NULL,
    callid TEXT NOT NULL,
    duration INTEGER NOT NULL,
    read_at INTEGER,
    transcript TEXT,
    audio BLOB NOT NULL,
    created INTEGER NOT NULL
);
CREATE INDEX recordings_account ON recordings(account_id, created);
