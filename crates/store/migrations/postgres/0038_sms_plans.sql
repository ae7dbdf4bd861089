-- The simulated network's planned moves of an SMS (`Sms::take_planned` in src/sms.rs): when
-- nothing receives an SMS's moves as it is taken, its `sent` and `remote-queued` are stored
-- as times with its state, read as done once due, and written by the worker with its last
-- move (one visit an SMS instead of three). NULL: nothing planned. The view `sms` gains them
-- at its end.
ALTER TABLE sms_state ADD COLUMN plan_sent_at BIGINT, ADD COLUMN plan_queued_at BIGINT;
CREATE OR REPLACE VIEW sms AS
SELECT m.id, m.sid, m.account_id, m.direction, m.sender, m.recipient, m.body, m.encoding, m.parts,
       m.traffic_type, s.status, s.status_error, m.user_data, m.flash, m.webhook_url,
       m.billing_debit, m.carrier, s.message_ids, s.next_at, m.created, s.updated, s.sent_at,
       s.delivered_at, s.history, s.plan_sent_at, s.plan_queued_at
FROM sms_message m JOIN sms_state s ON s.sms_id = m.id;
