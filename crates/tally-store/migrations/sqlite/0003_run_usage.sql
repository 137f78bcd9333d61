-- tally store, schema version 3 (SQLite): what each implementer run cost
-- (docs/implementers.md#usage). Every column NULL: not read, or unknown (never zero).

ALTER TABLE runs ADD COLUMN usage_input INTEGER CHECK (usage_input IS NULL OR usage_input >= 0);
ALTER TABLE runs ADD COLUMN usage_output INTEGER CHECK (usage_output IS NULL OR usage_output >= 0);
ALTER TABLE runs ADD COLUMN usage_cached INTEGER CHECK (usage_cached IS NULL OR usage_cached >= 0);
ALTER TABLE runs ADD COLUMN usage_usd REAL CHECK (usage_usd IS NULL OR usage_usd >= 0);
-- claude | codex | gemini | aider | pi | file | manual; NULL: no usage was read.
ALTER TABLE runs ADD COLUMN usage_source TEXT;
-- reported | priced | file | manual; NULL while usage_usd is NULL.
ALTER TABLE runs ADD COLUMN usage_usd_source TEXT;
