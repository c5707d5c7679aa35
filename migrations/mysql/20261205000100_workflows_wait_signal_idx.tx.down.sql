ALTER TABLE workflows DROP INDEX workflows_wait_signal_idx;
