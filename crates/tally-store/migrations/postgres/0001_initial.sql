-- tally store, schema version 1 (PostgreSQL).
--
-- The same schema as migrations/sqlite/0001_initial.sql (see docs/store.md), spelled for
-- PostgreSQL: BIGINT for every integer (ids handed out by the application, no SERIAL),
-- DOUBLE PRECISION floats (exact f64 round trip), JSON as TEXT, closed vocabularies as TEXT
-- with CHECK constraints, and the campaigns -> candidates foreign key added after both tables.
-- Foreign keys are DEFERRABLE (checked per statement unless a transaction defers them): `tally
-- store copy` inserts rows in id order and links that point forward are checked at commit.
-- Applied in one transaction with its row in tally_schema_migrations.

CREATE TABLE config_texts (
    id      BIGINT PRIMARY KEY,
    sha256  TEXT NOT NULL UNIQUE,
    text    TEXT NOT NULL
);

CREATE TABLE campaigns (
    id              BIGINT PRIMARY KEY,
    name            TEXT NOT NULL UNIQUE,
    state           TEXT NOT NULL CHECK (state IN ('active', 'held', 'stopped')),
    reason          TEXT,
    state_since_ms  BIGINT NOT NULL,
    created_ms      BIGINT NOT NULL,
    evaluator       TEXT NOT NULL,
    config_text_id  BIGINT NOT NULL REFERENCES config_texts (id) DEFERRABLE,
    head            BIGINT
);

CREATE TABLE candidates (
    campaign_id     BIGINT NOT NULL REFERENCES campaigns (id) DEFERRABLE,
    number          BIGINT NOT NULL CHECK (number >= 0),
    revision        TEXT NOT NULL,
    parent          BIGINT,
    proposed_by     TEXT NOT NULL,
    note            TEXT,
    verdict         TEXT NOT NULL
                    CHECK (verdict IN ('pending', 'keep', 'interesting', 'discard', 'crash')),
    reason          TEXT,
    -- NULL while the loop owns the candidate (pending), 'loop', or 'person:<name>'.
    verdict_set_by  TEXT CHECK (verdict_set_by = 'loop' OR verdict_set_by LIKE 'person:_%'),
    judged_against  BIGINT,
    created_ms      BIGINT NOT NULL,
    judged_ms       BIGINT,
    PRIMARY KEY (campaign_id, number),
    FOREIGN KEY (campaign_id, parent) REFERENCES candidates (campaign_id, number) DEFERRABLE,
    FOREIGN KEY (campaign_id, judged_against) REFERENCES candidates (campaign_id, number) DEFERRABLE,
    CHECK ((verdict = 'pending') = (verdict_set_by IS NULL)),
    CHECK ((verdict = 'pending') = (judged_ms IS NULL))
);

CREATE INDEX candidates_queue ON candidates (campaign_id, verdict, number);

CREATE TABLE evaluations (
    id              BIGINT PRIMARY KEY,
    campaign_id     BIGINT NOT NULL REFERENCES campaigns (id) DEFERRABLE,
    candidate       BIGINT NOT NULL,
    bar             BIGINT,
    kind            TEXT NOT NULL
                    CHECK (kind IN ('baseline', 'judge', 'confirm', 'remeasure')),
    repeats         BIGINT NOT NULL CHECK (repeats >= 1),
    state           TEXT NOT NULL
                    CHECK (state IN ('queued', 'running', 'finished', 'abandoned')),
    note            TEXT,
    queued_ms       BIGINT NOT NULL,
    started_ms      BIGINT,
    ended_ms        BIGINT,
    FOREIGN KEY (campaign_id, candidate) REFERENCES candidates (campaign_id, number) DEFERRABLE,
    FOREIGN KEY (campaign_id, bar) REFERENCES candidates (campaign_id, number) DEFERRABLE
);

CREATE INDEX evaluations_by_campaign ON evaluations (campaign_id, id);

CREATE TABLE measurements (
    id              BIGINT PRIMARY KEY,
    campaign_id     BIGINT NOT NULL REFERENCES campaigns (id) DEFERRABLE,
    candidate       BIGINT NOT NULL,
    evaluation_id   BIGINT REFERENCES evaluations (id) DEFERRABLE,
    side            TEXT NOT NULL CHECK (side IN ('candidate', 'bar')),
    sample          BIGINT NOT NULL CHECK (sample >= 0),
    attempt         BIGINT NOT NULL CHECK (attempt >= 1),
    retry_of        BIGINT REFERENCES measurements (id) DEFERRABLE,
    pair            BIGINT REFERENCES measurements (id) DEFERRABLE,
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
    config_text_id  BIGINT REFERENCES config_texts (id) DEFERRABLE,
    recorded_by     TEXT NOT NULL CHECK (recorded_by = 'loop' OR recorded_by LIKE 'person:_%'),
    FOREIGN KEY (campaign_id, candidate) REFERENCES candidates (campaign_id, number) DEFERRABLE
);

CREATE INDEX measurements_by_campaign ON measurements (campaign_id, id);
CREATE INDEX measurements_by_candidate ON measurements (campaign_id, candidate, id);
CREATE INDEX measurements_by_evaluation ON measurements (evaluation_id, id);

CREATE TABLE measurement_units (
    measurement_id  BIGINT NOT NULL REFERENCES measurements (id) DEFERRABLE,
    metric          TEXT NOT NULL,
    unit            TEXT NOT NULL,
    value           DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (measurement_id, metric, unit)
);

-- Added once both tables exist (a campaign's head is one of its candidates).
ALTER TABLE campaigns ADD FOREIGN KEY (id, head) REFERENCES candidates (campaign_id, number) DEFERRABLE;
