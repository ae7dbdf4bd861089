-- Parts of concatenated inbound SMS from real networks, kept until the last one arrives: each
-- part is acknowledged to the SMSC only once it is stored here.
CREATE TABLE inbound_parts (
    network TEXT NOT NULL,
    sender TEXT NOT NULL,
    recipient TEXT NOT NULL,
    reference INTEGER NOT NULL,
    total INTEGER NOT NULL,
    seq INTEGER NOT NULL,
    text TEXT NOT NULL,
    created INTEGER NOT NULL,
    PRIMARY KEY (network, sender, recipient, reference, total, seq)
);
CREATE INDEX inbound_parts_created ON inbound_parts(created);
