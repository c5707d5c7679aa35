DROP INDEX remote_tasks_pending_idx;
CREATE INDEX remote_tasks_pending_idx ON remote_tasks (function, id) WHERE status = 'PENDING';
