-- Reruns: a workflow started from an ended one (rerunWorkflow), linked to it both ways.
CREATE TABLE workflow_reruns (
    workflow_id BIGINT NOT NULL PRIMARY KEY,
    rerun_of    BIGINT NOT NULL,
    KEY workflow_reruns_of_idx (rerun_of, workflow_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
