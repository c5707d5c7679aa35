-- Nothing to change: MariaDB and MySQL lease each function's oldest pending tasks by ID from
-- remote_tasks_pending_idx (status, function, id). Kept so that every dialect has the same
-- migrations.
SELECT 1;
