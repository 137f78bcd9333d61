-- tally store, schema version 6 (SQLite): a run may end `stopped`, cut by the campaign's stop
-- (docs/implementers.md#stop-grace). SQLite cannot change a CHECK constraint in place, so the
-- `runs` table is rebuilt with the same columns, in the same order, and its rows copied.
-- Nothing references `runs`, and it has no index of its own.

CREATE TABLE runs_new (
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
                     'not_started', 'cancelled', 'stopped')),
    exit_code       INTEGER,
    error           TEXT,
    -- JSON list: [{"revision", "candidate" (number or null), "note"}], oldest first.
    commits         TEXT NOT NULL DEFAULT '[]',
    ended_ms        BIGINT,
    usage_input     INTEGER CHECK (usage_input IS NULL OR usage_input >= 0),
    usage_output    INTEGER CHECK (usage_output IS NULL OR usage_output >= 0),
    usage_cached    INTEGER CHECK (usage_cached IS NULL OR usage_cached >= 0),
    usage_usd       REAL CHECK (usage_usd IS NULL OR usage_usd >= 0),
    -- claude | codex | gemini | aider | pi | file | manual; NULL: no usage was read.
    usage_source    TEXT,
    -- reported | priced | file | manual; NULL while usage_usd is NULL.
    usage_usd_source TEXT,
    PRIMARY KEY (campaign_id, number),
    FOREIGN KEY (campaign_id, idea) REFERENCES ideas (campaign_id, number),
    FOREIGN KEY (campaign_id, base) REFERENCES candidates (campaign_id, number)
);

INSERT INTO runs_new SELECT * FROM runs;
DROP TABLE runs;
ALTER TABLE runs_new RENAME TO runs;
