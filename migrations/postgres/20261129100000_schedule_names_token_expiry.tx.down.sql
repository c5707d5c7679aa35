DROP INDEX schedules_name_key;
ALTER TABLE schedules DROP COLUMN name;
ALTER TABLE api_tokens DROP COLUMN expires_at;
