-- The parts of outbound SMS a real network (an SMPP connector) took, by the network's id,
-- so delivery receipts find their SMS.
CREATE TABLE sms_parts (
    id INTEGER PRIMARY KEY,
    network TEXT NOT NULL,
    message_id TEXT NOT NULL,
    sms_id INTEGER NOT NULL REFERENCES sms(id),
    part INTEGER NOT NULL,
    status TEXT NOT NULL,
    detail TEXT NOT NULL DEFAULT '',
    updated INTEGER NOT NULL
);
CREATE INDEX sms_parts_message ON sms_parts(network, message_id);
CREATE INDEX sms_parts_sms ON sms_parts(sms_id, part);

-- SMPP connectors added through /admin (those of the configuration file are not stored).
CREATE TABLE smpp_connectors (
    name TEXT PRIMARY KEY,
    config TEXT NOT NULL,
    created INTEGER NOT NULL
);
