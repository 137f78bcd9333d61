-- tally store, schema version 2 (SQLite): implementer ideas (docs/implementers.md#ideas).
-- Portable as 0001 is: a PostgreSQL copy differs only in `INTEGER` -> `BIGINT` for ids.

CREATE TABLE ideas (
    campaign_id     INTEGER NOT NULL REFERENCES campaigns (id),
    number          INTEGER NOT NULL CHECK (number >= 1),
    title           TEXT NOT NULL CHECK (length(trim(title)) > 0),
    text            TEXT NOT NULL,
    -- NULL: the `[implementer] attempts` in force.
    attempts        INTEGER CHECK (attempts IS NULL OR attempts >= 1),
    -- NULL: the head at launch.
    base            INTEGER,
    state           TEXT NOT NULL CHECK (state IN ('ready', 'parked', 'done')),
    reason          TEXT,
    added_by        TEXT NOT NULL,
    created_ms      BIGINT NOT NULL,
    state_since_ms  BIGINT NOT NULL,
    PRIMARY KEY (campaign_id, number),
    FOREIGN KEY (campaign_id, base) REFERENCES candidates (campaign_id, number)
);
