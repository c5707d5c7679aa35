DROP TABLE workflow_reruns;
