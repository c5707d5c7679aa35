-- The definition types an executor's pool claims (comma-separated, as its last claim named them;
-- NULL: not recorded yet): what the API shows, and how stuck workflows are found.
ALTER TABLE executors ADD COLUMN types TEXT NULL;
