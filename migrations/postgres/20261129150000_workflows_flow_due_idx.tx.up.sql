-- The oldest due workflow of one concurrency key, in claim order, read by a fair flow claim for
-- each key it serves in turn: an index in that order, so that a key with a long queue is read by
-- its first rows instead of being sorted whole. Its predicate is workflows_flow_idx's: only flow
-- control's statements name it, and the hot statements keep their plans.
CREATE INDEX workflows_flow_due_idx ON workflows (type, concurrency_key, priority DESC, next_activation, id)
    WHERE concurrency_key IS NOT NULL AND status IN ('CREATED', 'IN_PROGRESS', 'EXECUTING', 'WAITING');
