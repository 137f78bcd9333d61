-- tally store (PostgreSQL): what the Slurm job of a sample held (docs/campaign.md#gpu-hours),
-- the same columns as the SQLite store's 0005_held_gpus. All three NULL for a local run or a
-- report added by hand; all three set for a sample run as a Slurm job.

-- GPUs allocated to the job; 0: none that Slurm knows of.
ALTER TABLE measurements ADD COLUMN held_gpus BIGINT CHECK (held_gpus >= 0);
-- How long the job held them, nanoseconds.
ALTER TABLE measurements ADD COLUMN held_ns BIGINT CHECK (held_ns >= 0);
-- sacct | scontrol | wall: where held_ns came from.
ALTER TABLE measurements ADD COLUMN held_from TEXT CHECK (held_from IN ('sacct', 'scontrol', 'wall'));
