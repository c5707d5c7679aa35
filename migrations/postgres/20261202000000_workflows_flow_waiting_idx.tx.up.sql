-- A keyed workflow enters one flow index at a time: workflows_flow_due_idx while it may be claimed
-- (CREATED, IN_PROGRESS, WAITING) and workflows_flow_holders_idx while it holds its key's slot.
-- workflows_flow_idx, which held both, goes: claiming a keyed workflow wrote three index entries
-- of flow control where it now writes one, and a key's walk and head probe step over fewer
-- entries of workflows that ran. The key walk and the counts read the two that remain.
DROP INDEX workflows_flow_idx;
DROP INDEX workflows_flow_due_idx;
CREATE INDEX workflows_flow_due_idx ON workflows (type, concurrency_key, priority DESC, next_activation, id)
    WHERE concurrency_key IS NOT NULL AND status IN ('CREATED', 'IN_PROGRESS', 'WAITING');
