-- SIP trunks added by the operator through /admin/sip (those of the TOML file are not
-- stored): the configuration as JSON, started with the server.
CREATE TABLE sip_trunks (
    name TEXT PRIMARY KEY,
    config TEXT NOT NULL,
    created BIGINT NOT NULL
);
