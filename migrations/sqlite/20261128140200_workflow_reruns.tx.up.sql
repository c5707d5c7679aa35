-- Reruns: a workflow started from an ended one (rerunWorkflow), linked to it both ways.
CREATE TABLE workflow_reruns (
    workflow_id BIGINT PRIMARY KEY,
    rerun_of    BIGINT NOT NULL
);
CREATE INDEX workflow_reruns_of_idx ON workflow_reruns (rerun_of, workflow_id);
