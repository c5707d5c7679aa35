ALTER TABLE remote_tasks DROP INDEX remote_tasks_pending_idx, ADD INDEX remote_tasks_pending_idx (status, function, id);
