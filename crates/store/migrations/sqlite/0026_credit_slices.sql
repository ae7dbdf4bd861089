-- Credit reserved in slices (PostgreSQL's writers; SQLite's single writer never takes one):
-- a holder (one database session) debits its own slice of an account's credit, so writers
-- on several connections and nodes do not serialise on the account's row. An account's
-- balance is its `credit` plus the `remaining` of its slices. See the `slices` module.
CREATE TABLE credit_slices (
    account_id BIGINT NOT NULL REFERENCES accounts(id),
    holder BIGINT NOT NULL,
    remaining BIGINT NOT NULL,
    PRIMARY KEY (account_id, holder)
);
