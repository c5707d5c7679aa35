ALTER TABLE workflows DROP INDEX workflows_flow_heads_idx;
