DROP INDEX schedules_name_key ON schedules;
--bun:split
ALTER TABLE schedules DROP COLUMN name;
--bun:split
ALTER TABLE api_tokens DROP COLUMN expires_at;
