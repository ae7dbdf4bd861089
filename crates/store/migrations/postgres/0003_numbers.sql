CREATE TABLE scenarios (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    sid TEXT NOT NULL UNIQUE,
    account_id BIGINT NOT NULL REFERENCES accounts(id),
    name TEXT NOT NULL,
    script TEXT NOT NULL,
    created BIGINT NOT NULL,
    updated BIGINT NOT NULL
);
CREATE INDEX scenarios_account ON scenarios(account_id, updated);

CREATE TABLE reservations (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    token TEXT NOT NULL UNIQUE,
    account_id BIGINT NOT NULL REFERENCES accounts(id),
    status TEXT NOT NULL,
    country TEXT NOT NULL,
    type TEXT NOT NULL,
    class TEXT NOT NULL,
    setup_total BIGINT NOT NULL,
    monthly_total BIGINT NOT NULL,
    expires BIGINT NOT NULL,
    created BIGINT NOT NULL,
    updated BIGINT NOT NULL
);
CREATE INDEX reservations_live ON reservations(status, expires);
CREATE INDEX reservations_account ON reservations(account_id, status);

CREATE TABLE numbers (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    e164 TEXT NOT NULL UNIQUE,
    country TEXT NOT NULL,
    type TEXT NOT NULL,
    class TEXT NOT NULL,
    prefix TEXT NOT NULL,
    area TEXT NOT NULL,
    setup_price BIGINT NOT NULL,
    monthly_price BIGINT NOT NULL,
    account_id BIGINT REFERENCES accounts(id),
    assigned BIGINT,
    paid_until BIGINT,
    reservation_id BIGINT REFERENCES reservations(id),
    scenario_id BIGINT REFERENCES scenarios(id),
    end_user_id BIGINT REFERENCES end_users(id)
);
CREATE INDEX numbers_free ON numbers(country, type, class, e164) WHERE account_id IS NULL AND reservation_id IS NULL;
CREATE INDEX numbers_owner ON numbers(account_id, assigned);
CREATE INDEX numbers_reservation ON numbers(reservation_id);
CREATE INDEX numbers_scenario ON numbers(scenario_id);
CREATE INDEX numbers_end_user ON numbers(end_user_id);
CREATE INDEX numbers_billing ON numbers(paid_until) WHERE account_id IS NOT NULL;

CREATE TABLE reservation_items (
    reservation_id BIGINT NOT NULL REFERENCES reservations(id),
    number_id BIGINT NOT NULL REFERENCES numbers(id),
    e164 TEXT NOT NULL,
    PRIMARY KEY (reservation_id, number_id)
);

CREATE TABLE events (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    event_id TEXT NOT NULL UNIQUE,
    account_id BIGINT NOT NULL REFERENCES accounts(id),
    type TEXT NOT NULL,
    data TEXT NOT NULL,
    created BIGINT NOT NULL
);
CREATE INDEX events_account ON events(account_id, type, id);
