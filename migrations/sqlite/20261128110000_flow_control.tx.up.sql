-- Flow control: a workflow's concurrency key, the limits set at run time (they win over a
-- definition's), one row per flow-controlled type that its claims lock in turn, and the rate
-- limits' theoretical arrival times (GCRA) per type and key.
ALTER TABLE workflows ADD COLUMN concurrency_key TEXT;
-- The holders and waiters of a type's keys, and of its workflows without a key; ended workflows
-- never enter them. Their predicates name concurrency_key so that only flow control's statements
-- can use them: the hot statements (claim, complete) keep their plans.
CREATE INDEX workflows_flow_idx ON workflows (type, concurrency_key, status)
    WHERE concurrency_key IS NOT NULL AND status IN ('CREATED', 'IN_PROGRESS', 'EXECUTING', 'WAITING');
CREATE INDEX workflows_flow_keyless_idx ON workflows (type, status)
    WHERE concurrency_key IS NULL AND status IN ('CREATED', 'IN_PROGRESS', 'EXECUTING', 'WAITING');
CREATE TABLE flow_controls (
    type     TEXT NOT NULL PRIMARY KEY,
    settings TEXT NOT NULL,
    updated  TEXT NOT NULL
);
CREATE TABLE flow_locks (
    type TEXT NOT NULL PRIMARY KEY
);
CREATE TABLE flow_rates (
    type     TEXT NOT NULL,
    rate_key TEXT NOT NULL,
    tat      TEXT NOT NULL,
    PRIMARY KEY (type, rate_key)
);
