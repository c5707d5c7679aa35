-- A poll reads each of its functions' oldest pending tasks in (created, id) order, as on the other
-- backends: remote_tasks_pending_idx holds the pending tasks first, then by function, in that order.
ALTER TABLE remote_tasks DROP INDEX remote_tasks_pending_idx, ADD INDEX remote_tasks_pending_idx (status, function, created, id);
