-- tally store (PostgreSQL): a run may end `stopped`, cut by the campaign's stop
-- (docs/implementers.md#stop-grace); SQLite's 0006_run_end_stopped.

ALTER TABLE runs DROP CONSTRAINT runs_end_reason_check;
ALTER TABLE runs ADD CONSTRAINT runs_end_reason_check CHECK (end_reason IS NULL OR end_reason IN
    ('finished', 'failed', 'timed_out', 'no_commits', 'interrupted', 'not_started', 'cancelled',
     'stopped'));
