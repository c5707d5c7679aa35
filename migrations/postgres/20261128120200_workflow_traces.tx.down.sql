DROP TABLE workflow_traces;
