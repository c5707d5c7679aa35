-- The due index is ordered by type after the group: a claim reads each of its types' due
-- workflows by a probe of its own and merges them in claim order, so it never reads through the
-- due workflows of a type it does not take (a flow-controlled type's held backlog: with 100,000
-- of them, each claim of the other types read them all).
DROP INDEX workflows_due_idx;
CREATE INDEX workflows_due_idx ON workflows (executor_group, type, priority DESC, next_activation, id)
    WHERE status IN ('CREATED', 'IN_PROGRESS', 'WAITING') AND next_activation IS NOT NULL;
