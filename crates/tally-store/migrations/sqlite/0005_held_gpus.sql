-- tally store, schema version 5 (SQLite): what the Slurm job of a sample held
-- (docs/campaign.md#gpu-hours). All three NULL for a local run or a report added by hand;
-- all three set for a sample run as a Slurm job.

-- GPUs allocated to the job; 0: none that Slurm knows of.
ALTER TABLE measurements ADD COLUMN held_gpus INTEGER CHECK (held_gpus IS NULL OR held_gpus >= 0);
-- How long the job held them, nanoseconds.
ALTER TABLE measurements ADD COLUMN held_ns INTEGER CHECK (held_ns IS NULL OR held_ns >= 0);
-- sacct | scontrol | wall: where held_ns came from.
ALTER TABLE measurements ADD COLUMN held_from TEXT
    CHECK (held_from IS NULL OR held_from IN ('sacct', 'scontrol', 'wall'));
