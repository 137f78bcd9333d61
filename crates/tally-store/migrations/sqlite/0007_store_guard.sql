-- tally store, schema version 6 (SQLite): the store refuses writes that do not come from tally
-- (docs/store.md#guard, docs/implementers.md#protection).
--
-- Every table gets a trigger before each INSERT, UPDATE and DELETE that calls tally_writer(),
-- a SQL function that only tally's own connections register. Any other program (the sqlite3
-- shell, a script) fails to prepare the write with "no such function: tally_writer", so nothing
-- is written. Dropping or changing a trigger needs no function: tally checks before every
-- evaluation and launch that exactly these triggers exist with exactly this text, and holds the
-- campaign ("store tampered: ...") if not. `tally store check --repair` restores them from this
-- file, so each trigger is one line, `CREATE TRIGGER name ... END;`, and the text must not change.
-- PostgreSQL has no copy of this migration: its URL never reaches an implementer.

CREATE TRIGGER tally_guard_config_texts_insert BEFORE INSERT ON config_texts BEGIN SELECT tally_writer(); END;
CREATE TRIGGER tally_guard_config_texts_update BEFORE UPDATE ON config_texts BEGIN SELECT tally_writer(); END;
CREATE TRIGGER tally_guard_config_texts_delete BEFORE DELETE ON config_texts BEGIN SELECT tally_writer(); END;
CREATE TRIGGER tally_guard_campaigns_insert BEFORE INSERT ON campaigns BEGIN SELECT tally_writer(); END;
CREATE TRIGGER tally_guard_campaigns_update BEFORE UPDATE ON campaigns BEGIN SELECT tally_writer(); END;
CREATE TRIGGER tally_guard_campaigns_delete BEFORE DELETE ON campaigns BEGIN SELECT tally_writer(); END;
CREATE TRIGGER tally_guard_candidates_insert BEFORE INSERT ON candidates BEGIN SELECT tally_writer(); END;
CREATE TRIGGER tally_guard_candidates_update BEFORE UPDATE ON candidates BEGIN SELECT tally_writer(); END;
CREATE TRIGGER tally_guard_candidates_delete BEFORE DELETE ON candidates BEGIN SELECT tally_writer(); END;
CREATE TRIGGER tally_guard_evaluations_insert BEFORE INSERT ON evaluations BEGIN SELECT tally_writer(); END;
CREATE TRIGGER tally_guard_evaluations_update BEFORE UPDATE ON evaluations BEGIN SELECT tally_writer(); END;
CREATE TRIGGER tally_guard_evaluations_delete BEFORE DELETE ON evaluations BEGIN SELECT tally_writer(); END;
CREATE TRIGGER tally_guard_measurements_insert BEFORE INSERT ON measurements BEGIN SELECT tally_writer(); END;
CREATE TRIGGER tally_guard_measurements_update BEFORE UPDATE ON measurements BEGIN SELECT tally_writer(); END;
CREATE TRIGGER tally_guard_measurements_delete BEFORE DELETE ON measurements BEGIN SELECT tally_writer(); END;
CREATE TRIGGER tally_guard_measurement_units_insert BEFORE INSERT ON measurement_units BEGIN SELECT tally_writer(); END;
CREATE TRIGGER tally_guard_measurement_units_update BEFORE UPDATE ON measurement_units BEGIN SELECT tally_writer(); END;
CREATE TRIGGER tally_guard_measurement_units_delete BEFORE DELETE ON measurement_units BEGIN SELECT tally_writer(); END;
CREATE TRIGGER tally_guard_ideas_insert BEFORE INSERT ON ideas BEGIN SELECT tally_writer(); END;
CREATE TRIGGER tally_guard_ideas_update BEFORE UPDATE ON ideas BEGIN SELECT tally_writer(); END;
CREATE TRIGGER tally_guard_ideas_delete BEFORE DELETE ON ideas BEGIN SELECT tally_writer(); END;
CREATE TRIGGER tally_guard_runs_insert BEFORE INSERT ON runs BEGIN SELECT tally_writer(); END;
CREATE TRIGGER tally_guard_runs_update BEFORE UPDATE ON runs BEGIN SELECT tally_writer(); END;
CREATE TRIGGER tally_guard_runs_delete BEFORE DELETE ON runs BEGIN SELECT tally_writer(); END;
CREATE TRIGGER tally_guard_checks_insert BEFORE INSERT ON checks BEGIN SELECT tally_writer(); END;
CREATE TRIGGER tally_guard_checks_update BEFORE UPDATE ON checks BEGIN SELECT tally_writer(); END;
CREATE TRIGGER tally_guard_checks_delete BEFORE DELETE ON checks BEGIN SELECT tally_writer(); END;
