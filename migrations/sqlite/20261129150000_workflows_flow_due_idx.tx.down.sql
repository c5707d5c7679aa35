DROP INDEX workflows_flow_due_idx;
