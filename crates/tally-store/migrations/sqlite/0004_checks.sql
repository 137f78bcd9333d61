-- tally store, schema version 4 (SQLite): `[checks]` runs (docs/campaign.md#checks).
-- Version 3 is taken by the implementer usage migration; this one only adds a table.

-- One row per finished check run of a candidate (a run cut short is not recorded, and runs again).
CREATE TABLE checks (
    campaign_id     INTEGER NOT NULL REFERENCES campaigns (id),
    candidate       INTEGER NOT NULL,
    -- The checks' identity: canonical JSON of the `[checks]` names and argvs.
    checks_key      TEXT NOT NULL,
    commands        INTEGER NOT NULL CHECK (commands >= 0),
    passed          INTEGER NOT NULL CHECK (passed IN (0, 1)),
    failed_check    TEXT,
    reason          TEXT,
    started_ms      BIGINT NOT NULL,
    ended_ms        BIGINT NOT NULL,
    FOREIGN KEY (campaign_id, candidate) REFERENCES candidates (campaign_id, number)
);

CREATE INDEX checks_by_candidate ON checks (campaign_id, candidate);
