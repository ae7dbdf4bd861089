-- A scenario's runs newest first (the console's list): the index ends in the id, so a page
-- is a range scan at any depth instead of a sort of every run of the scenario. It serves
-- every use of the index it replaces, whose columns it begins with.
CREATE INDEX runs_scenario_recent ON runs(account_id, scenario_sid, id);
DROP INDEX runs_account;
