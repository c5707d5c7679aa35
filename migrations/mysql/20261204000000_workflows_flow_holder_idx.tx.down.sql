ALTER TABLE workflows DROP INDEX workflows_flow_holder_idx, DROP COLUMN flow_holder;
