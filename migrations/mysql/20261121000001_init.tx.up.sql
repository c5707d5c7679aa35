-- cairn schema, MariaDB 10.11+ / MySQL 8 (InnoDB, utf8mb4). Times are DATETIME(6) in UTC; JSON is
-- LONGTEXT. Columns that are keys or are looked up are VARCHAR(255): the API limits them to 255
-- characters, and a key of utf8mb4 text must fit InnoDB's 3072 bytes. Other text is TEXT (at most
-- 64 KB, for texts the API bounds) or LONGTEXT (errors, documents, whatever a step writes).
-- MySQL has no partial indexes: where PostgreSQL indexes only some rows, a generated column that is
-- NULL for the other rows does the same job (STORED: InnoDB keeps an index on a virtual column up
-- at a much higher cost). MySQL's DDL commits as it goes, so each statement stands alone
-- (--bun:split).
CREATE TABLE workflow_definitions (
    id             BIGINT       NOT NULL AUTO_INCREMENT PRIMARY KEY,
    type           VARCHAR(255) NOT NULL,
    version        INT          NOT NULL,
    checksum       VARCHAR(255) NOT NULL,
    description    LONGTEXT     NOT NULL,
    spec           LONGTEXT     NOT NULL,
    executor_group VARCHAR(255) NOT NULL,
    release_state  VARCHAR(32)  NOT NULL DEFAULT 'ONLINE',
    created        DATETIME(6)  NOT NULL,
    modified       DATETIME(6)  NOT NULL,
    UNIQUE KEY workflow_definitions_type_version_key (type, version),
    UNIQUE KEY workflow_definitions_type_checksum_key (type, checksum)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
--bun:split
CREATE TABLE executors (
    id             BIGINT       NOT NULL AUTO_INCREMENT PRIMARY KEY,
    host           TEXT         NOT NULL,
    pid            INT          NOT NULL,
    executor_group VARCHAR(255) NOT NULL,
    started        DATETIME(6)  NOT NULL,
    active         DATETIME(6)  NOT NULL,
    expires        DATETIME(6)  NOT NULL,
    stopped        DATETIME(6)  NULL,
    KEY executors_live_idx (stopped, expires)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
--bun:split
CREATE TABLE workflows (
    id                 BIGINT       NOT NULL AUTO_INCREMENT PRIMARY KEY,
    type               VARCHAR(255) NOT NULL,
    definition_version INT          NOT NULL,
    external_id        VARCHAR(255) NULL,
    business_key       VARCHAR(255) NULL,
    launch_token       VARCHAR(255) NULL,
    status             VARCHAR(32)  NOT NULL,
    state              VARCHAR(255) NOT NULL,
    state_text         TEXT         NULL,
    next_activation    DATETIME(6)  NULL,
    retries            INT          NOT NULL DEFAULT 0,
    priority           INT          NOT NULL DEFAULT 0,
    executor_group     VARCHAR(255) NOT NULL,
    executor_id        BIGINT       NULL,
    parent_id          BIGINT       NULL,
    root_id            BIGINT       NULL,
    parent_action_id   BIGINT       NULL,
    input              LONGTEXT     NOT NULL,
    variables          LONGTEXT     NOT NULL,
    wait_signal        VARCHAR(255) NULL,
    last_error         LONGTEXT     NULL,
    step_deadline      DATETIME(6)  NULL,
    created            DATETIME(6)  NOT NULL,
    modified           DATETIME(6)  NOT NULL,
    started            DATETIME(6)  NULL,
    finished           DATETIME(6)  NULL,
    version            INT          NOT NULL DEFAULT 0,
    -- The group of a workflow a worker may claim, NULL for every other: the due index below holds
    -- only claimable workflows, so finished ones never slow a claim down.
    claim_group        VARCHAR(255) AS (CASE WHEN status IN ('CREATED', 'IN_PROGRESS', 'WAITING')
                           AND next_activation IS NOT NULL THEN executor_group END) STORED,
    -- The status of workflows that need a person or are parked, NULL for the statuses every step
    -- passes through (CREATED, IN_PROGRESS, EXECUTING, FINISHED), so that a step adds no index work.
    attention_status   VARCHAR(32)  AS (CASE WHEN status IN ('MANUAL', 'FAILED', 'PAUSED', 'WAITING', 'CANCELLED')
                           THEN status END) STORED,
    CONSTRAINT workflows_parent_fk FOREIGN KEY (parent_id) REFERENCES workflows (id) ON DELETE CASCADE,
    KEY workflows_due_idx (claim_group, priority DESC, next_activation, id),
    UNIQUE KEY workflows_type_external_id_idx (type, external_id),
    KEY workflows_attention_idx (attention_status, id),
    KEY workflows_type_idx (type, id),
    KEY workflows_parent_idx (parent_id, id),
    KEY workflows_root_idx (root_id),
    KEY workflows_executor_idx (executor_id),
    KEY workflows_business_key_idx (business_key),
    KEY workflows_launch_token_idx (launch_token)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
--bun:split
-- History tables are written several rows per step on the hot path, so they carry no foreign keys.
CREATE TABLE task_instances (
    id          BIGINT       NOT NULL AUTO_INCREMENT PRIMARY KEY,
    workflow_id BIGINT       NOT NULL,
    state       TEXT         NOT NULL,
    task_type   TEXT         NOT NULL,
    attempt     INT          NOT NULL,
    status      VARCHAR(32)  NOT NULL,
    executor_id BIGINT       NULL,
    host        TEXT         NOT NULL DEFAULT (''),
    started     DATETIME(6)  NOT NULL,
    finished    DATETIME(6)  NULL,
    output      LONGTEXT     NULL,
    error       LONGTEXT     NULL,
    KEY task_instances_workflow_idx (workflow_id, id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
--bun:split
CREATE TABLE actions (
    id               BIGINT       NOT NULL AUTO_INCREMENT PRIMARY KEY,
    workflow_id      BIGINT       NOT NULL,
    type             VARCHAR(64)  NOT NULL,
    from_state       TEXT         NULL,
    state            VARCHAR(255) NOT NULL,
    state_text       TEXT         NULL,
    retry_no         INT          NOT NULL DEFAULT 0,
    executor_id      BIGINT       NULL,
    actor            TEXT         NULL,
    task_instance_id BIGINT       NULL,
    at               DATETIME(6)  NOT NULL,
    KEY actions_workflow_idx (workflow_id, id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
--bun:split
CREATE TABLE action_variables (
    workflow_id BIGINT       NOT NULL,
    action_id   BIGINT       NOT NULL,
    `key`       VARCHAR(255) NOT NULL,
    value       LONGTEXT     NULL,
    PRIMARY KEY (workflow_id, action_id, `key`),
    KEY action_variables_action_idx (action_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
--bun:split
CREATE TABLE side_effects (
    id          BIGINT       NOT NULL AUTO_INCREMENT PRIMARY KEY,
    workflow_id BIGINT       NOT NULL,
    `key`       VARCHAR(255) NOT NULL,
    value_type  VARCHAR(255) NOT NULL,
    value       LONGTEXT     NOT NULL,
    created     DATETIME(6)  NOT NULL,
    UNIQUE KEY side_effects_workflow_key (workflow_id, `key`),
    CONSTRAINT side_effects_workflow_fk FOREIGN KEY (workflow_id) REFERENCES workflows (id) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
--bun:split
CREATE TABLE activity_logs (
    id               BIGINT       NOT NULL AUTO_INCREMENT PRIMARY KEY,
    workflow_id      BIGINT       NOT NULL,
    task_instance_id BIGINT       NULL,
    name             LONGTEXT     NOT NULL,
    value            LONGTEXT     NOT NULL,
    at               DATETIME(6)  NOT NULL,
    KEY activity_logs_workflow_idx (workflow_id, id),
    KEY activity_logs_task_instance_idx (task_instance_id, id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
--bun:split
CREATE TABLE signals (
    id                 BIGINT       NOT NULL AUTO_INCREMENT PRIMARY KEY,
    workflow_id        BIGINT       NOT NULL,
    name               VARCHAR(255) NOT NULL,
    payload            LONGTEXT     NULL,
    idempotency_key    VARCHAR(255) NULL,
    created            DATETIME(6)  NOT NULL,
    consumed           DATETIME(6)  NULL,
    consumed_action_id BIGINT       NULL,
    KEY signals_pending_idx (workflow_id, name, consumed, id),
    KEY signals_workflow_idx (workflow_id, id),
    CONSTRAINT signals_workflow_fk FOREIGN KEY (workflow_id) REFERENCES workflows (id) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
--bun:split
CREATE TABLE form_submissions (
    id           BIGINT       NOT NULL AUTO_INCREMENT PRIMARY KEY,
    workflow_id  BIGINT       NOT NULL,
    state        TEXT         NOT NULL,
    data         LONGTEXT     NOT NULL,
    submitted_by TEXT         NOT NULL DEFAULT (''),
    signature    TEXT         NULL,
    created      DATETIME(6)  NOT NULL,
    KEY form_submissions_workflow_idx (workflow_id, id),
    CONSTRAINT form_submissions_workflow_fk FOREIGN KEY (workflow_id) REFERENCES workflows (id) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
--bun:split
CREATE TABLE schedules (
    id              BIGINT       NOT NULL AUTO_INCREMENT PRIMARY KEY,
    definition_type VARCHAR(255) NOT NULL,
    cron            VARCHAR(255) NOT NULL,
    timezone        VARCHAR(255) NOT NULL DEFAULT 'UTC',
    start_at        DATETIME(6)  NULL,
    end_at          DATETIME(6)  NULL,
    input           LONGTEXT     NOT NULL,
    priority        INT          NOT NULL DEFAULT 0,
    paused          BOOLEAN      NOT NULL DEFAULT FALSE,
    overlap_policy  VARCHAR(32)  NOT NULL DEFAULT 'SKIP',
    next_fire       DATETIME(6)  NULL,
    last_fire       DATETIME(6)  NULL,
    created         DATETIME(6)  NOT NULL,
    modified        DATETIME(6)  NOT NULL,
    KEY schedules_due_idx (paused, next_fire)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
--bun:split
-- A key is stored with what it is scoped to ("<workflow id>/<key>" for a signal's), so it may be
-- longer than the 255 characters the API accepts.
CREATE TABLE idempotency_keys (
    operation   VARCHAR(64)  NOT NULL,
    `key`       VARCHAR(320) NOT NULL,
    workflow_id BIGINT       NOT NULL,
    created     DATETIME(6)  NOT NULL,
    PRIMARY KEY (operation, `key`),
    CONSTRAINT idempotency_keys_workflow_fk FOREIGN KEY (workflow_id) REFERENCES workflows (id) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
--bun:split
-- Change events for subscriptions. An auto-increment id can commit out of order (a reader at id 7
-- would skip a 6 that commits later), so events are stamped at commit with txid, a number taken
-- from change_event_commits while its row is locked until that commit: commits that write events
-- take their numbers in commit order, and a reader follows (txid, id).
CREATE TABLE change_events (
    id          BIGINT       NOT NULL AUTO_INCREMENT PRIMARY KEY,
    txid        BIGINT       NOT NULL DEFAULT 0,
    workflow_id BIGINT       NOT NULL,
    type        VARCHAR(64)  NOT NULL,
    action_id   BIGINT       NULL,
    status      VARCHAR(32)  NOT NULL,
    state       VARCHAR(255) NOT NULL,
    at          DATETIME(6)  NOT NULL,
    KEY change_events_cursor_idx (txid, id),
    KEY change_events_workflow_idx (workflow_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
--bun:split
CREATE TABLE change_event_commits (
    id BIGINT NOT NULL PRIMARY KEY,
    n  BIGINT NOT NULL
) ENGINE=InnoDB;
--bun:split
INSERT INTO change_event_commits (id, n) VALUES (1, 0);
--bun:split
CREATE TABLE api_tokens (
    id        BIGINT       NOT NULL AUTO_INCREMENT PRIMARY KEY,
    name      VARCHAR(255) NOT NULL,
    hash      VARCHAR(255) NOT NULL,
    role      VARCHAR(32)  NOT NULL,
    created   DATETIME(6)  NOT NULL,
    last_used DATETIME(6)  NULL,
    revoked   DATETIME(6)  NULL,
    UNIQUE KEY api_tokens_name_key (name),
    UNIQUE KEY api_tokens_hash_key (hash)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
