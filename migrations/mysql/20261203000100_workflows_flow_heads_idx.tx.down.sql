ALTER TABLE workflows DROP INDEX workflows_flow_heads_idx, DROP COLUMN flow_group, DROP COLUMN flow_next;
