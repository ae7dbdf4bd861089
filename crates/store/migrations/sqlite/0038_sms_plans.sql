-- The simulated network's planned moves of an SMS (`Sms::take_planned` in src/sms.rs): when
-- nothing receives an SMS's moves as it is taken, its `sent` and `remote-queued` are stored
-- as times with it, read as done once due, and written by the worker with its last move
-- (one visit an SMS instead of three). NULL: nothing planned.
ALTER TABLE sms ADD COLUMN plan_sent_at BIGINT;
ALTER TABLE sms ADD COLUMN plan_queued_at BIGINT;
