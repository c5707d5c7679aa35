-- The workflows waiting for a signal, by its name: a published event finds those that wait for its
-- type here. Without it, each event read the whole workflows table, ended workflows included. A
-- workflow's wait_signal is set while it waits for a signal and cleared when it moves on.
ALTER TABLE workflows ADD INDEX workflows_wait_signal_idx (wait_signal, id);
