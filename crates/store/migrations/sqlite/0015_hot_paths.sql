-- Nothing reads the ledger by cause, and the cause (an SMS sid, a number) put every debit
-- on a random page of this index: a page written again at each commit.
DROP INDEX ledger_cause;

-- The rate table's version: every import moves it, so nodes keep the rates in memory and
-- reload them only when it moved.
CREATE TABLE rates_version (version INTEGER NOT NULL);
INSERT INTO rates_version (version) VALUES (1);
