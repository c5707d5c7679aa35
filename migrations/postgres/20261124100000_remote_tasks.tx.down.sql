ALTER TABLE api_tokens DROP COLUMN functions;
DROP TABLE remote_workers;
DROP TABLE remote_tasks;
