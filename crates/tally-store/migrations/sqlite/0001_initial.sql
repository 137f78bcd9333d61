-- tally store, schema version 1 (SQLite).
--
-- Portable on purpose (see docs/store.md): integer ids handed out by the application
-- (no AUTOINCREMENT), BIGINT instants in ms since the Unix epoch, BIGINT durations in ns,
-- REAL floats, JSON as TEXT, closed vocabularies as TEXT with CHECK constraints.
-- A PostgreSQL copy of this file differs only in `INTEGER PRIMARY KEY` -> `BIGINT PRIMARY KEY`,
-- `REAL` -> `DOUBLE PRECISION`, the application_id pragma, and the campaigns -> candidates
-- foreign key, which PostgreSQL adds with ALTER TABLE after both tables exist.

PRAGMA application_id = 1952541817; -- 0x74616c79, "taly"

CREATE TABLE config_texts (
    id      INTEGER PRIMARY KEY,
    sha256  TEXT NOT NULL UNIQUE,
    text    TEXT NOT NULL
);

CREATE TABLE campaigns (
    id              INTEGER PRIMARY KEY,
    name            TEXT NOT NULL UNIQUE,
    state           TEXT NOT NULL CHECK (state IN ('active', 'held', 'stopped')),
    reason          TEXT,
    state_since_ms  BIGINT NOT NULL,
    created_ms      BIGINT NOT NULL,
    evaluator       TEXT NOT NULL,
    config_text_id  INTEGER NOT NULL REFERENCES config_texts (id),
    head            INTEGER,
    FOREIGN KEY (id, head) REFERENCES candidates (campaign_id, number)
);

CREATE TABLE candidates (
    campaign_id     INTEGER NOT NULL REFERENCES campaigns (id),
    number          INTEGER NOT NULL CHECK (number >= 0),
    revision        TEXT NOT NULL,
    parent          INTEGER,
    proposed_by     TEXT NOT NULL,
    note            TEXT,
    verdict         TEXT NOT NULL
                    CHECK (verdict IN ('pending', 'keep', 'interesting', 'discard', 'crash')),
    reason          TEXT,
    -- NULL while the loop owns the candidate (pending), 'loop', or 'person:<name>'.
    verdict_set_by  TEXT CHECK (verdict_set_by = 'loop' OR verdict_set_by LIKE 'person:_%'),
    judged_against  INTEGER,
    created_ms      BIGINT NOT NULL,
    judged_ms       BIGINT,
    PRIMARY KEY (campaign_id, number),
    FOREIGN KEY (campaign_id, parent) REFERENCES candidates (campaign_id, number),
    FOREIGN KEY (campaign_id, judged_against) REFERENCES candidates (campaign_id, number),
    CHECK ((verdict = 'pending') = (verdict_set_by IS NULL)),
    CHECK ((verdict = 'pending') = (judged_ms IS NULL))
);

CREATE INDEX candidates_queue ON candidates (campaign_id, verdict, number);

CREATE TABLE evaluations (
    id              INTEGER PRIMARY KEY,
    campaign_id     INTEGER NOT NULL REFERENCES campaigns (id),
    candidate       INTEGER NOT NULL,
    bar             INTEGER,
    kind            TEXT NOT NULL
                    CHECK (kind IN ('baseline', 'judge', 'confirm', 'remeasure')),
    repeats         INTEGER NOT NULL CHECK (repeats >= 1),
    state           TEXT NOT NULL
                    CHECK (state IN ('queued', 'running', 'finished', 'abandoned')),
    note            TEXT,
    queued_ms       BIGINT NOT NULL,
    started_ms      BIGINT,
    ended_ms        BIGINT,
    FOREIGN KEY (campaign_id, candidate) REFERENCES candidates (campaign_id, number),
    FOREIGN KEY (campaign_id, bar) REFERENCES candidates (campaign_id, number)
);

CREATE INDEX evaluations_by_campaign ON evaluations (campaign_id, id);

CREATE TABLE measurements (
    id              INTEGER PRIMARY KEY,
    campaign_id     INTEGER NOT NULL REFERENCES campaigns (id),
    candidate       INTEGER NOT NULL,
    evaluation_id   INTEGER REFERENCES evaluations (id),
    side            TEXT NOT NULL CHECK (side IN ('candidate', 'bar')),
    sample          INTEGER NOT NULL CHECK (sample >= 0),
    attempt         INTEGER NOT NULL CHECK (attempt >= 1),
    retry_of        INTEGER REFERENCES measurements (id),
    pair            INTEGER REFERENCES measurements (id),
    evaluator       TEXT NOT NULL,
    rung            TEXT,
    duration_ns     BIGINT CHECK (duration_ns >= 0),
    metrics         TEXT NOT NULL, -- JSON object: name -> finite number
    error           TEXT,
    started_ms      BIGINT NOT NULL,
    ended_ms        BIGINT NOT NULL,
    stdout_log      TEXT,
    stderr_log      TEXT,
    evidence        TEXT,
    gpu_busy_ns     BIGINT CHECK (gpu_busy_ns >= 0),
    config_text_id  INTEGER REFERENCES config_texts (id),
    recorded_by     TEXT NOT NULL CHECK (recorded_by = 'loop' OR recorded_by LIKE 'person:_%'),
    FOREIGN KEY (campaign_id, candidate) REFERENCES candidates (campaign_id, number)
);

CREATE INDEX measurements_by_campaign ON measurements (campaign_id, id);
CREATE INDEX measurements_by_candidate ON measurements (campaign_id, candidate, id);
CREATE INDEX measurements_by_evaluation ON measurements (evaluation_id, id);

CREATE TABLE measurement_units (
    measurement_id  INTEGER NOT NULL REFERENCES measurements (id),
    metric          TEXT NOT NULL,
    unit            TEXT NOT NULL,
    value           REAL NOT NULL,
    PRIMARY KEY (measurement_id, metric, unit)
);
