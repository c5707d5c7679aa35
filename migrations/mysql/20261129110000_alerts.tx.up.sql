-- Alert rules: when a workflow of one of the types (none: every type) reaches one of the statuses,
-- a delivery to the webhook is recorded in the transaction of the status change and sent by a node.
CREATE TABLE alert_rules (
    id          BIGINT       NOT NULL AUTO_INCREMENT PRIMARY KEY,
    name        VARCHAR(255) NOT NULL,
    types       TEXT         NOT NULL,
    statuses    TEXT         NOT NULL,
    webhook_url TEXT         NOT NULL,
    created     DATETIME(6)  NOT NULL,
    UNIQUE KEY alert_rules_name_key (name)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
--bun:split
-- One POST of one workflow's status to one rule's webhook, with its retries.
CREATE TABLE alert_deliveries (
    id              BIGINT       NOT NULL AUTO_INCREMENT PRIMARY KEY,
    rule_id         BIGINT       NOT NULL,
    rule_name       VARCHAR(255) NOT NULL,
    webhook_url     TEXT         NOT NULL,
    workflow_id     BIGINT       NOT NULL,
    workflow_type   VARCHAR(255) NOT NULL,
    workflow_status VARCHAR(32)  NOT NULL,
    state           VARCHAR(255) NOT NULL,
    status          VARCHAR(16)  NOT NULL,
    attempts        INT          NOT NULL DEFAULT 0,
    next_attempt    DATETIME(6)  NOT NULL,
    lease_owner     VARCHAR(255) NULL,
    lease_until     DATETIME(6)  NULL,
    last_error      TEXT         NULL,
    response_code   INT          NULL,
    created         DATETIME(6)  NOT NULL,
    finished        DATETIME(6)  NULL,
    KEY alert_deliveries_due_idx (status, next_attempt),
    KEY alert_deliveries_rule_idx (rule_id, id),
    KEY alert_deliveries_workflow_idx (workflow_id, id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
