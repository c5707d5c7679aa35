-- Nothing to change: MariaDB and MySQL lease by ID from remote_tasks_pending_idx (status, function,
-- id), which holds the pending tasks first. Kept so that every dialect has the same migrations.
SELECT 1;
