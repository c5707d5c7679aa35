DROP INDEX workflows_flow_due_idx;
CREATE INDEX workflows_flow_due_idx ON workflows (type, concurrency_key, priority DESC, next_activation, id)
    WHERE concurrency_key IS NOT NULL AND status IN ('CREATED', 'IN_PROGRESS', 'EXECUTING', 'WAITING');
CREATE INDEX workflows_flow_idx ON workflows (type, concurrency_key, status)
    WHERE concurrency_key IS NOT NULL AND status IN ('CREATED', 'IN_PROGRESS', 'EXECUTING', 'WAITING');
