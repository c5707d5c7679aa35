-- Bulk operations: one operator's action (retry, cancel, pause, resume, signal, delete) on every
-- workflow a filter matched when it started. The targets are snapshotted at the start, one row
-- each; a node leases the operation (lease_owner until lease_until) and works through the pending
-- targets in batches, marking each one in the transaction that changes its workflow.
CREATE TABLE bulk_operations (
    id             BIGSERIAL PRIMARY KEY,
    action         TEXT        NOT NULL,
    status         TEXT        NOT NULL,
    dry_run        BOOLEAN     NOT NULL DEFAULT FALSE,
    filter         JSONB       NOT NULL,
    reason         TEXT,
    actor          TEXT        NOT NULL,
    state          TEXT,
    signal_name    TEXT,
    signal_payload JSONB,
    total          BIGINT      NOT NULL DEFAULT 0,
    would_change   BIGINT      NOT NULL DEFAULT 0,
    processed      BIGINT      NOT NULL DEFAULT 0,
    succeeded      BIGINT      NOT NULL DEFAULT 0,
    failed         BIGINT      NOT NULL DEFAULT 0,
    lease_owner    TEXT,
    lease_until    TIMESTAMPTZ,
    created        TIMESTAMPTZ NOT NULL,
    modified       TIMESTAMPTZ NOT NULL,
    finished       TIMESTAMPTZ
);
-- What the runners read: the operations still to be worked on.
CREATE INDEX bulk_operations_active_idx ON bulk_operations (id) WHERE status IN ('PENDING', 'RUNNING');

CREATE TABLE bulk_operation_targets (
    operation_id BIGINT NOT NULL,
    workflow_id  BIGINT NOT NULL,
    status       TEXT   NOT NULL,
    error        TEXT,
    PRIMARY KEY (operation_id, workflow_id)
);
-- The next batch (pending, in workflow order) and the page of failures.
CREATE INDEX bulk_operation_targets_status_idx ON bulk_operation_targets (operation_id, status, workflow_id);
