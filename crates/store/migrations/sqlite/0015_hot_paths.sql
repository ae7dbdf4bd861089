-- Nothing reads the ledger by cause, and the cause (an SMS sid, a number) put every debit
-- on a random page of this index: a page written again at each commit.
DROP INDEX ledger_cause;

-- The rate table's version: every import moves it, so nodes keep the rates in memory and
-- reload them only when it moved.
CREATE TABLE rates_version (version INTEGER NOT NULL);
INSERT INTO rates_version (version) VALUES (1);

-- The status history lives in its SMS: one line "old new at\n" per move (statuses are single
-- words, `at` Unix milliseconds), appended by the statement that moves the status. A move
-- is then one UPDATE instead of an UPDATE, an INSERT and, for its event, a SELECT.
ALTER TABLE sms ADD COLUMN history TEXT NOT NULL DEFAULT '';
UPDATE sms SET history = (
    SELECT group_concat(old_status || ' ' || new_status || ' ' || at || char(10), '' ORDER BY h.id)
    FROM sms_history h WHERE h.sms_id = sms.id
) WHERE id IN (SELECT sms_id FROM sms_history);
DROP TABLE sms_history;

-- An SMS sent without a sender takes the account's first number in the destination's
-- country: one index seek, instead of the account's numbers sorted for every SMS.
CREATE INDEX numbers_owner_country ON numbers(account_id, country, assigned, e164);

-- Only a diagnostic listing read events by account, and every event (four per SMS on the
-- simulated network) paid an entry in this index.
DROP INDEX events_account;
