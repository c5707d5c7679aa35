-- How many attempts a workflow ran since it started (or was last retried by an operator): the
-- engine fails a workflow whose steps reach the step budget (--max-steps).
ALTER TABLE workflows ADD COLUMN steps INTEGER NOT NULL DEFAULT 0;
