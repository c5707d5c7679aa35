DROP INDEX workflows_flow_holders_idx;
CREATE INDEX workflows_flow_holders_idx ON workflows (type, status, concurrency_key)
    WHERE concurrency_key IS NOT NULL AND status IN ('IN_PROGRESS', 'EXECUTING', 'WAITING');
