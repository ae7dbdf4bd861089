CREATE TABLE runs (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    sid TEXT NOT NULL UNIQUE,
    account_id BIGINT NOT NULL REFERENCES accounts(id),
    scenario_sid TEXT NOT NULL,
    scenario_name TEXT NOT NULL,
    script TEXT NOT NULL,
    type TEXT NOT NULL,
    status TEXT NOT NULL,
    state TEXT,
    variables TEXT NOT NULL DEFAULT '{}',
    log TEXT NOT NULL DEFAULT '[]',
    error TEXT,
    call_id BIGINT,
    pending TEXT NOT NULL DEFAULT '[]',
    version BIGINT NOT NULL DEFAULT 0,
    next_at BIGINT,
    started BIGINT NOT NULL,
    ended BIGINT,
    updated BIGINT NOT NULL
);
CREATE INDEX runs_account ON runs(account_id, scenario_sid);
CREATE INDEX runs_due ON runs(next_at) WHERE next_at IS NOT NULL;
CREATE INDEX runs_call ON runs(call_id) WHERE call_id IS NOT NULL;

CREATE TABLE calls (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    callid TEXT NOT NULL UNIQUE,
    account_id BIGINT NOT NULL REFERENCES accounts(id),
    direction TEXT NOT NULL,
    caller TEXT NOT NULL,
    callee TEXT NOT NULL,
    number TEXT,
    scenario_sid TEXT,
    status TEXT NOT NULL,
    started BIGINT NOT NULL,
    answered BIGINT,
    ended BIGINT,
    hangup_cause BIGINT,
    hangup_source TEXT,
    billing_debit BIGINT NOT NULL DEFAULT 0,
    parent_id BIGINT REFERENCES calls(id),
    dtmf TEXT NOT NULL DEFAULT '',
    audio BYTEA,
    updated BIGINT NOT NULL
);
CREATE INDEX calls_account_started ON calls(account_id, direction, started);

CREATE TABLE call_timeline (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    call_id BIGINT NOT NULL REFERENCES calls(id),
    at BIGINT NOT NULL,
    kind TEXT NOT NULL,
    data TEXT NOT NULL
);
CREATE INDEX call_timeline_call ON call_timeline(call_id, id);

CREATE TABLE recordings (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    sid TEXT NOT NULL UNIQUE,
    account_id BIGINT NOT NULL REFERENCES accounts(id),
    type TEXT NOT NULL,
    caller TEXT NOT NULL,
    callee TEXT NOT NULL,
    callid TEXT NOT NULL,
    duration BIGINT NOT NULL,
    read_at BIGINT,
    transcript TEXT,
    audio BYTEA NOT NULL,
    created BIGINT NOT NULL
);
CREATE INDEX recordings_account ON recordings(account_id, created);
