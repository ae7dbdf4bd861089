CREATE TABLE audio_files (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    sid TEXT NOT NULL UNIQUE,
    account_id BIGINT NOT NULL REFERENCES accounts(id),
    name TEXT NOT NULL,
    status TEXT NOT NULL,
    source TEXT,
    content_type TEXT,
    size BIGINT,
    duration_ms BIGINT,
    error TEXT,
    revision BIGINT NOT NULL DEFAULT 0,
    created BIGINT NOT NULL,
    updated BIGINT NOT NULL
);
CREATE INDEX audio_files_account ON audio_files(account_id, updated);

CREATE TABLE audio_contents (
    audio_file_id BIGINT PRIMARY KEY REFERENCES audio_files(id) ON DELETE CASCADE,
    original BYTEA NOT NULL,
    converted BYTEA
);

CREATE TABLE audio_conversions (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    audio_file_id BIGINT NOT NULL UNIQUE REFERENCES audio_files(id) ON DELETE CASCADE,
    revision BIGINT NOT NULL,
    attempts BIGINT NOT NULL DEFAULT 0,
    next_at BIGINT NOT NULL,
    created BIGINT NOT NULL
);
CREATE INDEX audio_conversions_due ON audio_conversions(next_at);

CREATE TABLE audio_phone_ids (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    audio_file_id BIGINT NOT NULL REFERENCES audio_files(id) ON DELETE CASCADE,
    e164 TEXT NOT NULL,
    code TEXT NOT NULL,
    expires BIGINT NOT NULL,
    used BIGINT,
    created BIGINT NOT NULL
);
CREATE INDEX audio_phone_ids_lookup ON audio_phone_ids(e164, code, expires);
CREATE INDEX audio_phone_ids_file ON audio_phone_ids(audio_file_id);
