ALTER TABLE executors DROP COLUMN types;
