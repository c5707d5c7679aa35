ALTER TABLE api_tokens DROP COLUMN functions;
--bun:split
DROP TABLE remote_workers;
--bun:split
DROP TABLE remote_tasks;
