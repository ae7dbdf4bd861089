-- A scenario's runs newest first (the console's list). SQLite's index already ends in the
-- rowid (the id); it is made explicit so both databases hold the same index.
CREATE INDEX runs_scenario_recent ON runs(account_id, scenario_sid, id);
DROP INDEX runs_account;
