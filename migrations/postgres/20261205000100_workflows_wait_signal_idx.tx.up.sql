-- The workflows waiting for a signal, by its name: a published event finds those that wait for its
-- type here. Without it, each event read the whole workflows table, ended workflows included.
CREATE INDEX workflows_wait_signal_idx ON workflows (wait_signal, id) WHERE status = 'WAITING' AND wait_signal IS NOT NULL;
