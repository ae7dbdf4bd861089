-- Wrong record-by-phone codes, counted per calling number and per recording number in a
-- window: past the limit the key is locked out until the window ends, so guessing another
-- account's live code is not practical.
CREATE TABLE phone_code_failures (
    key TEXT PRIMARY KEY,
    window_start BIGINT NOT NULL,
    failures BIGINT NOT NULL
);
