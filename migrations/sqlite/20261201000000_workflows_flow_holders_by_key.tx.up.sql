-- workflows_flow_holders_idx by key first: a completion that hands a key's slot on counts that
-- key's holders alone, one index probe, where the index by status first made it walk every
-- holder of the type for each key (the status column, implied by the predicate, was no bound).
DROP INDEX workflows_flow_holders_idx;
CREATE INDEX workflows_flow_holders_idx ON workflows (type, concurrency_key, status)
    WHERE concurrency_key IS NOT NULL AND status IN ('IN_PROGRESS', 'EXECUTING', 'WAITING');
