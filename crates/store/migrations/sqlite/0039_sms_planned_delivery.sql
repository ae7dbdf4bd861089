-- The simulated network's planned delivery of an SMS (`Sms::take_planned` in src/sms.rs):
-- when nothing receives an SMS's moves as it is taken, nothing on this platform owns its
-- recipient and its timetable ends in `delivered`, its delivery is stored as a time with it
-- too, and the worker never visits it (`next_at` NULL). Reads show it delivered once due. A
-- subscription to its moves or a console feed opened before then makes it a visit again
-- (`sms::unplan_deliveries`). NULL: not planned.
ALTER TABLE sms ADD COLUMN plan_delivered_at BIGINT;
