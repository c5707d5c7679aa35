DROP INDEX workflows_debounce_idx ON workflows;
--bun:split
ALTER TABLE workflows DROP COLUMN debounce_key;
