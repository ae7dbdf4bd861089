-- The simulated network's planned delivery of an SMS (`Sms::take_planned` in src/sms.rs):
-- when nothing receives an SMS's moves as it is taken, nothing on this platform owns its
-- recipient and its timetable ends in `delivered`, its delivery is stored as a time with its
-- state too, and the worker never visits it (`next_at` NULL). Reads show it delivered once
-- due. A subscription to its moves or a console feed opened before then makes it a visit
-- again (`sms::unplan_deliveries`). NULL: not planned. The view `sms` gains it at its end.
ALTER TABLE sms_state ADD COLUMN plan_delivered_at BIGINT;
CREATE OR REPLACE VIEW sms AS
SELECT m.id, m.sid, m.account_id, m.direction, m.sender, m.recipient, m.body, m.encoding, m.parts,
       m.traffic_type, s.status, s.status_error, m.user_data, m.flash, m.webhook_url,
       m.billing_debit, m.carrier, s.message_ids, s.next_at, m.created, s.updated, s.sent_at,
       s.delivered_at, s.history, s.plan_sent_at, s.plan_queued_at, s.plan_delivered_at
FROM sms_message m JOIN sms_state s ON s.sms_id = m.id;
