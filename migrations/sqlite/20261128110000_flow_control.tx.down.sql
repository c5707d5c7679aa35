DROP TABLE flow_rates;
DROP TABLE flow_locks;
DROP TABLE flow_controls;
DROP INDEX workflows_flow_keyless_idx;
DROP INDEX workflows_flow_idx;
ALTER TABLE workflows DROP COLUMN concurrency_key;
