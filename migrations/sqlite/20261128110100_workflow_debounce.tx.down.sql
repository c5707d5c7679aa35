DROP INDEX workflows_debounce_idx;
ALTER TABLE workflows DROP COLUMN debounce_key;
