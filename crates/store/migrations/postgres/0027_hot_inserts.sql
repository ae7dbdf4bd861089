-- The rows written for every SMS, move, event and run no longer check their account by a
-- foreign key. Each check was a query per row (PostgreSQL's referential triggers) that also
-- locked the account's row in KEY SHARE mode: the busiest row of a sending account, shared by
-- every transaction writing for it, whose lock word each of them rewrote (and turned into a
-- multixact when several held it at once). Accounts are never deleted (they are suspended),
-- and these rows take their account from an authenticated request or from a row that has
-- one, so the checks guarded nothing the code does not. A delivery no longer checks its
-- event either: retention deletes the deliveries of an event before the event.
ALTER TABLE sms DROP CONSTRAINT IF EXISTS sms_account_id_fkey;
ALTER TABLE ledger DROP CONSTRAINT IF EXISTS ledger_account_id_fkey;
ALTER TABLE events DROP CONSTRAINT IF EXISTS events_account_id_fkey;
ALTER TABLE deliveries DROP CONSTRAINT IF EXISTS deliveries_account_id_fkey;
ALTER TABLE deliveries DROP CONSTRAINT IF EXISTS deliveries_event_id_fkey;
ALTER TABLE runs DROP CONSTRAINT IF EXISTS runs_account_id_fkey;
