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

-- One row per implementer run (docs/implementers.md#runs): inserted before the agent starts,
-- settled once its work is collected.
CREATE TABLE runs (
    campaign_id     INTEGER NOT NULL REFERENCES campaigns (id),
    number          INTEGER NOT NULL CHECK (number >= 1),
    idea            INTEGER NOT NULL,
    base            INTEGER NOT NULL,
    tag             TEXT NOT NULL,
    run_dir         TEXT NOT NULL,
    started_ms      BIGINT NOT NULL,
    deadline_ms     BIGINT NOT NULL,
    -- NULL while it runs.
    end_reason      TEXT CHECK (end_reason IS NULL OR end_reason IN
                    ('finished', 'failed', 'timed_out', 'no_commits', 'interrupted',
                     'not_started', 'cancelled')),
    exit_code       INTEGER,
    error           TEXT,
    -- JSON list: [{"revision", "candidate" (number or null), "note"}], oldest first.
    commits         TEXT NOT NULL DEFAULT '[]',
    ended_ms        BIGINT,
    PRIMARY KEY (campaign_id, number),
    FOREIGN KEY (campaign_id, idea) REFERENCES ideas (campaign_id, number),
    FOREIGN KEY (campaign_id, base) REFERENCES candidates (campaign_id, number)
);
