DROP INDEX workflows_due_idx;
CREATE INDEX workflows_due_idx ON workflows (executor_group, priority DESC, next_activation, id)
    WHERE status IN ('CREATED', 'IN_PROGRESS', 'WAITING') AND next_activation IS NOT NULL;
