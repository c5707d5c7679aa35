-- The workflows that hold a slot of their concurrency key (WORKFLOW scope; STEP scope's holders
-- are among them), by status and key: a flow claim counts a type's holders from these entries
-- alone, however many workflows of the type wait. Its predicate names concurrency_key, so only
-- flow control's statements use it and the hot statements keep their plans.
CREATE INDEX workflows_flow_holders_idx ON workflows (type, status, concurrency_key)
    WHERE concurrency_key IS NOT NULL AND status IN ('IN_PROGRESS', 'EXECUTING', 'WAITING');
