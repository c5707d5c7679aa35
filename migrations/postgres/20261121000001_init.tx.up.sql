-- cairn schema, PostgreSQL. Times are timestamptz in UTC; JSON is jsonb.
CREATE TABLE workflow_definitions (
    id             BIGSERIAL PRIMARY KEY,
    type           TEXT        NOT NULL,
    version        INTEGER     NOT NULL,
    checksum       TEXT        NOT NULL,
    description    TEXT        NOT NULL DEFAULT '',
    spec           JSONB       NOT NULL,
    executor_group TEXT        NOT NULL,
    release_state  TEXT        NOT NULL DEFAULT 'ONLINE',
    created        TIMESTAMPTZ NOT NULL,
    modified       TIMESTAMPTZ NOT NULL,
    UNIQUE (type, version),
    UNIQUE (type, checksum)
);

CREATE TABLE executors (
    id             BIGSERIAL PRIMARY KEY,
    host           TEXT        NOT NULL,
    pid            INTEGER     NOT NULL,
    executor_group TEXT        NOT NULL,
    started        TIMESTAMPTZ NOT NULL,
    active         TIMESTAMPTZ NOT NULL,
    expires        TIMESTAMPTZ NOT NULL,
    stopped        TIMESTAMPTZ
);
CREATE INDEX executors_live_idx ON executors (expires) WHERE stopped IS NULL;

CREATE TABLE workflows (
    id                 BIGSERIAL PRIMARY KEY,
    type               TEXT        NOT NULL,
    definition_version INTEGER     NOT NULL,
    external_id        TEXT,
    business_key       TEXT,
    launch_token       TEXT,
    status             TEXT        NOT NULL,
    state              TEXT        NOT NULL,
    state_text         TEXT,
    next_activation    TIMESTAMPTZ,
    retries            INTEGER     NOT NULL DEFAULT 0,
    priority           INTEGER     NOT NULL DEFAULT 0,
    executor_group     TEXT        NOT NULL,
    executor_id        BIGINT,
    parent_id          BIGINT REFERENCES workflows (id) ON DELETE CASCADE,
    root_id            BIGINT,
    parent_action_id   BIGINT,
    input              JSONB       NOT NULL DEFAULT '{}',
    variables          JSONB       NOT NULL DEFAULT '{}',
    wait_signal        TEXT,
    last_error         TEXT,
    step_deadline      TIMESTAMPTZ,
    created            TIMESTAMPTZ NOT NULL,
    modified           TIMESTAMPTZ NOT NULL,
    started            TIMESTAMPTZ,
    finished           TIMESTAMPTZ,
    version            INTEGER     NOT NULL DEFAULT 0
);
-- Due work, by group, in claim order; finished workflows never enter this index.
CREATE INDEX workflows_due_idx ON workflows (executor_group, priority DESC, next_activation, id)
    WHERE status IN ('CREATED', 'IN_PROGRESS', 'WAITING') AND next_activation IS NOT NULL;
CREATE UNIQUE INDEX workflows_type_external_id_idx ON workflows (type, external_id) WHERE external_id IS NOT NULL;
-- Workflows that need a person or are parked, for dashboards. Partial, so the statuses every step
-- passes through (CREATED, IN_PROGRESS, EXECUTING, FINISHED) add no index entries on the hot path.
CREATE INDEX workflows_attention_idx ON workflows (status, id)
    WHERE status IN ('MANUAL', 'FAILED', 'PAUSED', 'WAITING', 'CANCELLED');
CREATE INDEX workflows_type_idx ON workflows (type, id);
CREATE INDEX workflows_parent_idx ON workflows (parent_id, id) WHERE parent_id IS NOT NULL;
CREATE INDEX workflows_executor_idx ON workflows (executor_id) WHERE executor_id IS NOT NULL;
CREATE INDEX workflows_business_key_idx ON workflows (business_key) WHERE business_key IS NOT NULL;
-- Runs started by a schedule carry its launch token; overlap checks look them up.
CREATE INDEX workflows_launch_token_idx ON workflows (launch_token) WHERE launch_token IS NOT NULL;

-- History tables (task_instances, actions, action_variables, activity_logs, change_events) are
-- written several rows per step on the hot path, so they carry no foreign keys: each would cost an
-- index lookup and a row lock per insert. Rows are only ever written for existing workflows.
CREATE TABLE task_instances (
    id          BIGSERIAL PRIMARY KEY,
    workflow_id BIGINT      NOT NULL,
    state       TEXT        NOT NULL,
    task_type   TEXT        NOT NULL,
    attempt     INTEGER     NOT NULL,
    status      TEXT        NOT NULL,
    executor_id BIGINT,
    host        TEXT        NOT NULL DEFAULT '',
    started     TIMESTAMPTZ NOT NULL,
    finished    TIMESTAMPTZ,
    output      JSONB,
    error       TEXT
);
CREATE INDEX task_instances_workflow_idx ON task_instances (workflow_id, id);

CREATE TABLE actions (
    id               BIGSERIAL PRIMARY KEY,
    workflow_id      BIGINT      NOT NULL,
    type             TEXT        NOT NULL,
    from_state       TEXT,
    state            TEXT        NOT NULL,
    state_text       TEXT,
    retry_no         INTEGER     NOT NULL DEFAULT 0,
    executor_id      BIGINT,
    actor            TEXT,
    task_instance_id BIGINT,
    at               TIMESTAMPTZ NOT NULL
);
CREATE INDEX actions_workflow_idx ON actions (workflow_id, id);

CREATE TABLE action_variables (
    workflow_id BIGINT NOT NULL,
    action_id   BIGINT NOT NULL,
    key         TEXT   NOT NULL,
    value       JSONB,
    PRIMARY KEY (workflow_id, action_id, key)
);
CREATE INDEX action_variables_action_idx ON action_variables (action_id);

CREATE TABLE side_effects (
    id          BIGSERIAL PRIMARY KEY,
    workflow_id BIGINT      NOT NULL REFERENCES workflows (id) ON DELETE CASCADE,
    key         TEXT        NOT NULL,
    value_type  TEXT        NOT NULL,
    value       JSONB       NOT NULL,
    created     TIMESTAMPTZ NOT NULL,
    UNIQUE (workflow_id, key)
);

CREATE TABLE activity_logs (
    id               BIGSERIAL PRIMARY KEY,
    workflow_id      BIGINT      NOT NULL,
    task_instance_id BIGINT,
    name             TEXT        NOT NULL,
    value            TEXT        NOT NULL,
    at               TIMESTAMPTZ NOT NULL
);
CREATE INDEX activity_logs_workflow_idx ON activity_logs (workflow_id, id);

CREATE TABLE signals (
    id              BIGSERIAL PRIMARY KEY,
    workflow_id     BIGINT      NOT NULL REFERENCES workflows (id) ON DELETE CASCADE,
    name            TEXT        NOT NULL,
    payload         JSONB,
    idempotency_key TEXT,
    created         TIMESTAMPTZ NOT NULL,
    consumed        TIMESTAMPTZ,
    consumed_action_id BIGINT
);
CREATE INDEX signals_pending_idx ON signals (workflow_id, name, id) WHERE consumed IS NULL;
CREATE INDEX signals_workflow_idx ON signals (workflow_id, id);

CREATE TABLE form_submissions (
    id           BIGSERIAL PRIMARY KEY,
    workflow_id  BIGINT      NOT NULL REFERENCES workflows (id) ON DELETE CASCADE,
    state        TEXT        NOT NULL,
    data         JSONB       NOT NULL,
    submitted_by TEXT        NOT NULL DEFAULT '',
    signature    TEXT,
    created      TIMESTAMPTZ NOT NULL
);
CREATE INDEX form_submissions_workflow_idx ON form_submissions (workflow_id, id);

CREATE TABLE schedules (
    id              BIGSERIAL PRIMARY KEY,
    definition_type TEXT        NOT NULL,
    cron            TEXT        NOT NULL,
    timezone        TEXT        NOT NULL DEFAULT 'UTC',
    start_at        TIMESTAMPTZ,
    end_at          TIMESTAMPTZ,
    input           JSONB       NOT NULL DEFAULT '{}',
    priority        INTEGER     NOT NULL DEFAULT 0,
    paused          BOOLEAN     NOT NULL DEFAULT FALSE,
    overlap_policy  TEXT        NOT NULL DEFAULT 'SKIP',
    next_fire       TIMESTAMPTZ,
    last_fire       TIMESTAMPTZ,
    created         TIMESTAMPTZ NOT NULL,
    modified        TIMESTAMPTZ NOT NULL
);
CREATE INDEX schedules_due_idx ON schedules (next_fire) WHERE NOT paused;

CREATE TABLE idempotency_keys (
    operation   TEXT        NOT NULL,
    key         TEXT        NOT NULL,
    workflow_id BIGINT      NOT NULL REFERENCES workflows (id) ON DELETE CASCADE,
    created     TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (operation, key)
);

-- Change events for subscriptions. txid orders events by the transaction that wrote them: a reader
-- only reads below the oldest transaction still running, so no event is skipped by a later commit.
CREATE TABLE change_events (
    id          BIGSERIAL,
    txid        XID8        NOT NULL DEFAULT pg_current_xact_id(),
    workflow_id BIGINT      NOT NULL,
    type        TEXT        NOT NULL,
    action_id   BIGINT,
    status      TEXT        NOT NULL,
    state       TEXT        NOT NULL,
    at          TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (txid, id)
);

CREATE TABLE api_tokens (
    id        BIGSERIAL PRIMARY KEY,
    name      TEXT        NOT NULL UNIQUE,
    hash      TEXT        NOT NULL UNIQUE,
    role      TEXT        NOT NULL,
    created   TIMESTAMPTZ NOT NULL,
    last_used TIMESTAMPTZ,
    revoked   TIMESTAMPTZ
);
