DROP TABLE flow_rates;
--bun:split
DROP TABLE flow_locks;
--bun:split
DROP TABLE flow_controls;
--bun:split
DROP INDEX workflows_flow_idx ON workflows;
--bun:split
ALTER TABLE workflows DROP COLUMN concurrency_key;
