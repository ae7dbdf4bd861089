-- An account's running runs are counted at every run start (the quota of runs running at
-- once): only those, not every run the account ever had.
CREATE INDEX runs_running ON runs(account_id) WHERE status = 'running';
