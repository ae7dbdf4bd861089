ALTER TABLE accounts ADD COLUMN warning_level INTEGER NOT NULL DEFAULT 100000;
ALTER TABLE accounts ADD COLUMN shutdown_level INTEGER NOT NULL DEFAULT 0;
ALTER TABLE accounts ADD COLUMN below_warning INTEGER NOT NULL DEFAULT 0;
ALTER TABLE accounts ADD COLUMN suspended_by TEXT;
CREATE INDEX ledger_cause ON ledger(account_id, kind, cause);
