-- Remote tasks: a step that calls a function served by workers outside cairn (any language, over
-- GraphQL) leaves its workflow WAITING and one row here. Workers lease rows (a random token and a
-- deadline), and complete or fail them with the token; the fenced update checks both. Where
-- PostgreSQL has partial indexes, the status leads the key.
CREATE TABLE remote_tasks (
    id             BIGINT       NOT NULL AUTO_INCREMENT PRIMARY KEY,
    function       VARCHAR(255) NOT NULL,
    workflow_id    BIGINT       NOT NULL,
    state          VARCHAR(255) NOT NULL,
    executor_group VARCHAR(255) NOT NULL,
    input          LONGTEXT     NOT NULL,
    status         VARCHAR(32)  NOT NULL,
    attempt        INT          NOT NULL,
    max_attempts   INT          NOT NULL,
    lease_token    VARCHAR(255) NULL,
    lease_ms       INT          NOT NULL DEFAULT 0,
    lease_deadline DATETIME(6)  NULL,
    worker         VARCHAR(255) NULL,
    output         LONGTEXT     NULL,
    error          LONGTEXT     NULL,
    retryable      BOOLEAN      NOT NULL DEFAULT FALSE,
    created        DATETIME(6)  NOT NULL,
    leased         DATETIME(6)  NULL,
    finished       DATETIME(6)  NULL,
    consumed       DATETIME(6)  NULL,
    KEY remote_tasks_pending_idx (status, function, id),
    KEY remote_tasks_leased_idx (status, lease_deadline),
    KEY remote_tasks_workflow_idx (workflow_id, id),
    KEY remote_tasks_worker_idx (worker, status)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
--bun:split
CREATE TABLE remote_workers (
    name      VARCHAR(255) NOT NULL PRIMARY KEY,
    functions TEXT         NOT NULL,
    last_poll DATETIME(6)  NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
--bun:split
ALTER TABLE api_tokens ADD COLUMN functions TEXT NULL;
