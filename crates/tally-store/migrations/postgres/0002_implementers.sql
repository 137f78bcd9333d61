-- tally store (PostgreSQL): implementer ideas and runs with their usage
-- (docs/implementers.md#ideas, #runs, #usage) and `[checks]` runs (docs/campaign.md#checks).
--
-- The tables of SQLite's 0002_implementers, 0003_run_usage and 0004_checks in one migration,
-- spelled as 0001_initial.sql spells them: BIGINT integers, DOUBLE PRECISION floats, TEXT JSON,
-- DEFERRABLE foreign keys (so `tally store copy` can insert in any order within its
-- transaction). The one difference: SQLite orders check runs by rowid; here `checks` has an
-- `id` handed out under the store's write lock, as every other id is.

CREATE TABLE ideas (
    campaign_id     BIGINT NOT NULL REFERENCES campaigns (id) DEFERRABLE,
    number          BIGINT NOT NULL CHECK (number >= 1),
    title           TEXT NOT NULL CHECK (length(trim(title)) > 0),
    text            TEXT NOT NULL,
    -- NULL: the `[implementer] attempts` in force.
    attempts        BIGINT CHECK (attempts IS NULL OR attempts >= 1),
    -- NULL: the head at launch.
    base            BIGINT,
    state           TEXT NOT NULL CHECK (state IN ('ready', 'parked', 'done')),
    reason          TEXT,
    added_by        TEXT NOT NULL,
    created_ms      BIGINT NOT NULL,
    state_since_ms  BIGINT NOT NULL,
    PRIMARY KEY (campaign_id, number),
    FOREIGN KEY (campaign_id, base) REFERENCES candidates (campaign_id, number) DEFERRABLE
);

-- One row per implementer run: inserted before the agent starts, settled once its work is
-- collected. Usage columns NULL: not read, or unknown (never zero).
CREATE TABLE runs (
    campaign_id     BIGINT NOT NULL REFERENCES campaigns (id) DEFERRABLE,
    number          BIGINT NOT NULL CHECK (number >= 1),
    idea            BIGINT NOT NULL,
    base            BIGINT NOT NULL,
    tag             TEXT NOT NULL,
    run_dir         TEXT NOT NULL,
    started_ms      BIGINT NOT NULL,
    deadline_ms     BIGINT NOT NULL,
    -- NULL while it runs.
    end_reason      TEXT CHECK (end_reason IS NULL OR end_reason IN
                    ('finished', 'failed', 'timed_out', 'no_commits', 'interrupted',
                     'not_started', 'cancelled')),
    exit_code       BIGINT,
    error           TEXT,
    -- JSON list: [{"revision", "candidate" (number or null), "note"}], oldest first.
    commits         TEXT NOT NULL DEFAULT '[]',
    ended_ms        BIGINT,
    usage_input     BIGINT CHECK (usage_input IS NULL OR usage_input >= 0),
    usage_output    BIGINT CHECK (usage_output IS NULL OR usage_output >= 0),
    usage_cached    BIGINT CHECK (usage_cached IS NULL OR usage_cached >= 0),
    usage_usd       DOUBLE PRECISION CHECK (usage_usd IS NULL OR usage_usd >= 0),
    -- claude | codex | gemini | aider | pi | file | manual; NULL: no usage was read.
    usage_source    TEXT,
    -- reported | priced | file | manual; NULL while usage_usd is NULL.
    usage_usd_source TEXT,
    PRIMARY KEY (campaign_id, number),
    FOREIGN KEY (campaign_id, idea) REFERENCES ideas (campaign_id, number) DEFERRABLE,
    FOREIGN KEY (campaign_id, base) REFERENCES candidates (campaign_id, number) DEFERRABLE
);

-- One row per finished check run of a candidate (a run cut short is not recorded, and runs again).
CREATE TABLE checks (
    id              BIGINT PRIMARY KEY,
    campaign_id     BIGINT NOT NULL REFERENCES campaigns (id) DEFERRABLE,
    candidate       BIGINT NOT NULL,
    -- The checks' identity: canonical JSON of the `[checks]` names and argvs.
    checks_key      TEXT NOT NULL,
    commands        BIGINT NOT NULL CHECK (commands >= 0),
    passed          BIGINT NOT NULL CHECK (passed IN (0, 1)),
    failed_check    TEXT,
    reason          TEXT,
    started_ms      BIGINT NOT NULL,
    ended_ms        BIGINT NOT NULL,
    FOREIGN KEY (campaign_id, candidate) REFERENCES candidates (campaign_id, number) DEFERRABLE
);

CREATE INDEX checks_by_candidate ON checks (campaign_id, candidate, id);
