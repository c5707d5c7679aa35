-- Remote tasks: a step that calls a function served by workers outside cairn (any language, over
-- GraphQL) leaves its workflow WAITING and one row here. Workers lease rows (a random token and a
-- deadline), and complete or fail them with the token; the fenced update checks both.
CREATE TABLE remote_tasks (
    id             BIGSERIAL PRIMARY KEY,
    function       TEXT        NOT NULL,
    workflow_id    BIGINT      NOT NULL,
    state          TEXT        NOT NULL,
    executor_group TEXT        NOT NULL,
    input          JSONB       NOT NULL,
    status         TEXT        NOT NULL,
    attempt        INTEGER     NOT NULL,
    max_attempts   INTEGER     NOT NULL,
    lease_token    TEXT,
    lease_ms       INTEGER     NOT NULL DEFAULT 0,
    lease_deadline TIMESTAMPTZ,
    worker         TEXT,
    output         JSONB,
    error          JSONB,
    retryable      BOOLEAN     NOT NULL DEFAULT FALSE,
    created        TIMESTAMPTZ NOT NULL,
    leased         TIMESTAMPTZ,
    finished       TIMESTAMPTZ,
    consumed       TIMESTAMPTZ
);
-- What a poll reads: the oldest pending tasks of some functions.
CREATE INDEX remote_tasks_pending_idx ON remote_tasks (function, id) WHERE status = 'PENDING';
-- What the lease sweep reads: leases past their deadline.
CREATE INDEX remote_tasks_leased_idx ON remote_tasks (lease_deadline) WHERE status = 'LEASED';
-- What a step reads: its workflow's task not yet recorded.
CREATE INDEX remote_tasks_workflow_idx ON remote_tasks (workflow_id, id) WHERE consumed IS NULL;

-- The workers that polled, for the API's list (written at most about once a second per worker).
CREATE TABLE remote_workers (
    name      TEXT        PRIMARY KEY,
    functions TEXT        NOT NULL,
    last_poll TIMESTAMPTZ NOT NULL
);

-- A worker token lists the functions it may serve (comma-separated; NULL for other roles).
ALTER TABLE api_tokens ADD COLUMN functions TEXT;
