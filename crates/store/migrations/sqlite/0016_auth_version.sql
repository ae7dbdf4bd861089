-- The version of what authentication reads: moved by every change of an account's settings
-- (any column of `accounts` but its balance and the balance's flags) and of any API key, in
-- the transaction that makes the change. Nodes keep the accounts behind keys in memory and
-- read them again only when it moved (`key_cache`), so a key revoked or an account
-- suspended, from any process, is refused from the next request on. Debits and top-ups
-- change only `credit` and `below_warning`, so they leave it alone.
CREATE TABLE auth_version (version INTEGER NOT NULL);
INSERT INTO auth_version (version) VALUES (1);

CREATE TRIGGER accounts_auth_changed
AFTER UPDATE OF sid, name, parent_id, status, currency, billing_mode, login, password_hash,
    created, updated, warning_level, shutdown_level, rate_limit, rate_burst ON accounts
BEGIN
    UPDATE auth_version SET version = version + 1;
END;

CREATE TRIGGER accounts_auth_deleted AFTER DELETE ON accounts
BEGIN
    UPDATE auth_version SET version = version + 1;
END;

CREATE TRIGGER api_keys_auth_inserted AFTER INSERT ON api_keys
BEGIN
    UPDATE auth_version SET version = version + 1;
END;

CREATE TRIGGER api_keys_auth_changed AFTER UPDATE ON api_keys
BEGIN
    UPDATE auth_version SET version = version + 1;
END;

CREATE TRIGGER api_keys_auth_deleted AFTER DELETE ON api_keys
BEGIN
    UPDATE auth_version SET version = version + 1;
END;
