-- Bulk operations: one operator's action (retry, cancel, pause, resume, signal, delete) on every
-- workflow a filter matched when it started. The targets are snapshotted at the start, one row
-- each; a node leases the operation (lease_owner until lease_until) and works through the pending
-- targets in batches, marking each one in the transaction that changes its workflow.
CREATE TABLE bulk_operations (
    id             BIGINT       NOT NULL AUTO_INCREMENT PRIMARY KEY,
    action         VARCHAR(32)  NOT NULL,
    status         VARCHAR(32)  NOT NULL,
    dry_run        BOOLEAN      NOT NULL DEFAULT FALSE,
    filter         LONGTEXT     NOT NULL,
    reason         TEXT         NULL,
    actor          VARCHAR(255) NOT NULL,
    state          VARCHAR(255) NULL,
    signal_name    VARCHAR(255) NULL,
    signal_payload LONGTEXT     NULL,
    total          BIGINT       NOT NULL DEFAULT 0,
    would_change   BIGINT       NOT NULL DEFAULT 0,
    processed      BIGINT       NOT NULL DEFAULT 0,
    succeeded      BIGINT       NOT NULL DEFAULT 0,
    failed         BIGINT       NOT NULL DEFAULT 0,
    lease_owner    VARCHAR(255) NULL,
    lease_until    DATETIME(6)  NULL,
    created        DATETIME(6)  NOT NULL,
    modified       DATETIME(6)  NOT NULL,
    finished       DATETIME(6)  NULL,
    KEY bulk_operations_active_idx (status, id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
--bun:split
CREATE TABLE bulk_operation_targets (
    operation_id BIGINT      NOT NULL,
    workflow_id  BIGINT      NOT NULL,
    status       VARCHAR(32) NOT NULL,
    error        TEXT        NULL,
    PRIMARY KEY (operation_id, workflow_id),
    KEY bulk_operation_targets_status_idx (operation_id, status, workflow_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
