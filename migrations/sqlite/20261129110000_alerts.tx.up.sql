-- Alert rules: when a workflow of one of the types (none: every type) reaches one of the statuses,
-- a delivery to the webhook is recorded in the transaction of the status change and sent by a node.
CREATE TABLE alert_rules (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    name        TEXT        NOT NULL UNIQUE,
    types       TEXT        NOT NULL,
    statuses    TEXT        NOT NULL,
    webhook_url TEXT        NOT NULL,
    created     TEXT        NOT NULL
);
-- One POST of one workflow's status to one rule's webhook, with its retries.
CREATE TABLE alert_deliveries (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    rule_id         BIGINT      NOT NULL,
    rule_name       TEXT        NOT NULL,
    webhook_url     TEXT        NOT NULL,
    workflow_id     BIGINT      NOT NULL,
    workflow_type   TEXT        NOT NULL,
    workflow_status TEXT        NOT NULL,
    state           TEXT        NOT NULL,
    status          TEXT        NOT NULL,
    attempts        INTEGER     NOT NULL DEFAULT 0,
    next_attempt    TEXT        NOT NULL,
    lease_owner     TEXT,
    lease_until     TEXT       ,
    last_error      TEXT,
    response_code   INTEGER,
    created         TEXT        NOT NULL,
    finished        TEXT       
);
-- The sender's queue: pending deliveries due first.
CREATE INDEX alert_deliveries_due_idx ON alert_deliveries (status, next_attempt);
CREATE INDEX alert_deliveries_rule_idx ON alert_deliveries (rule_id, id);
CREATE INDEX alert_deliveries_workflow_idx ON alert_deliveries (workflow_id, id);
