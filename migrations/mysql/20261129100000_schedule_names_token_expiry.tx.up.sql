-- Schedules get an optional unique name (lookups by name); API tokens an optional expiry.
ALTER TABLE schedules ADD COLUMN name VARCHAR(255) NULL;
--bun:split
CREATE UNIQUE INDEX schedules_name_key ON schedules (name);
--bun:split
ALTER TABLE api_tokens ADD COLUMN expires_at DATETIME(6) NULL;
