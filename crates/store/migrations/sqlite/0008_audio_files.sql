CREATE TABLE audio_files (
    id INTEGER PRIMARY KEY,
    sid TEXT NOT NULL UNIQUE,
    account_id INTEGER NOT NULL REFERENCES accounts(id),
    name TEXT NOT NULL,
    status TEXT NOT NULL,
    source TEXT,
    content_type TEXT,
    size INTEGER,
    duration_ms INTEGER,
    error TEXT,
    revision INTEGER NOT NULL DEFAULT 0,
    created INTEGER NOT NULL,
    updated INTEGER NOT NULL
);
CREATE INDEX audio_files_account ON audio_files(account_id, updated);

CREATE TABLE audio_contents (
    audio_file_id INTEGER PRIMARY KEY REFERENCES audio_files(id) ON DELETE CASCADE,
    original BLOB NOT NULL,
    converted BLOB
);

CREATE TABLE audio_conversions (
    id INTEGER PRIMARY KEY,
    audio_file_id INTEGER NOT NULL UNIQUE REFERENCES audio_files(id) ON DELETE CASCADE,
    revision INTEGER NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    next_at INTEGER NOT NULL,
    created INTEGER NOT NULL
);
CREATE INDEX audio_conversions_due ON audio_conversions(next_at);

CREATE TABLE audio_phone_ids (
    id INTEGER PRIMARY KEY,
    audio_file_id INTEGER NOT NULL REFERENCES audio_files(id) ON DELETE CASCADE,
    e164 TEXT NOT NULL,
    code TEXT NOT NULL,
    expires INTEGER NOT NULL,
    used INTEGER,
    created INTEGER NOT NULL
);
CREATE INDEX audio_phone_ids_lookup ON audio_phone_ids(e164, code, expires);
CREATE INDEX audio_phone_ids_file ON audio_phone_ids(audio_file_id);
