-- The W3C traceparent of the request that started a workflow, when it had one: the workflow's
-- steps and remote tasks join that trace, on any node and after restarts. A side table, so that a
-- start without a trace writes nothing more.
CREATE TABLE workflow_traces (
    workflow_id BIGINT PRIMARY KEY,
    traceparent VARCHAR(64) NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
