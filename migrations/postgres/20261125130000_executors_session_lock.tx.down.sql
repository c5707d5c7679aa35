ALTER TABLE executors DROP COLUMN session_lock;
