-- Delivery receipts whose message id no part has (yet): kept, never dropped, until a part
-- with that id is recorded (a receipt can outrun the commit of its own submit_sm_resp), and
-- shown to the operator while unmatched. `message_key` is the id as parts store it; `next_at`
-- is when the worker next tries to match it (NULL: only when a part with its id is recorded).
CREATE TABLE smpp_receipts (
    id INTEGER PRIMARY KEY,
    network TEXT NOT NULL,
    message_id TEXT NOT NULL,
    message_key TEXT NOT NULL,
    status TEXT NOT NULL,
    detail TEXT NOT NULL DEFAULT '',
    received INTEGER NOT NULL,
    tries INTEGER NOT NULL DEFAULT 0,
    next_at INTEGER
);
CREATE INDEX smpp_receipts_message ON smpp_receipts(network, message_key);
CREATE INDEX smpp_receipts_due ON smpp_receipts(next_at) WHERE next_at IS NOT NULL;

-- Part ids are stored under their key: lowercase, and without leading zeros when all
-- hexadecimal (carriers pad the id in the response and not in the receipt, or the reverse).
UPDATE sms_parts SET message_id = CASE WHEN ltrim(message_id, '0') = '' THEN '0' ELSE ltrim(message_id, '0') END
WHERE message_id <> '' AND message_id NOT GLOB '*[^0-9a-f]*';

-- One row per part: a part's id is recorded as its response arrives, and once only.
DELETE FROM sms_parts WHERE id NOT IN (SELECT max(id) FROM sms_parts GROUP BY sms_id, part);
DROP INDEX sms_parts_sms;
CREATE UNIQUE INDEX sms_parts_sms ON sms_parts(sms_id, part);

-- The events of one SMS reach each subscriber in order: a delivery waits while an earlier
-- one with the same `order_key` (the SMS and the destination) is still pending.
ALTER TABLE deliveries ADD COLUMN order_key TEXT;
CREATE INDEX deliveries_order ON deliveries(order_key, id) WHERE order_key IS NOT NULL AND status = 'pending';
