DROP INDEX workflows_wait_signal_idx;
