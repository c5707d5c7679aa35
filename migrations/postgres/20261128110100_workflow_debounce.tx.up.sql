-- Debounce: a start with a debounce key folds into the workflow of its type and key that has not
-- run yet, found by this index.
ALTER TABLE workflows ADD COLUMN debounce_key VARCHAR(191);
CREATE INDEX workflows_debounce_idx ON workflows (type, debounce_key) WHERE status = 'CREATED' AND debounce_key IS NOT NULL;
