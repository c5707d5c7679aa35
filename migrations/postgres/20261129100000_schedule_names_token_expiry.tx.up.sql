-- Schedules get an optional unique name (lookups by name); API tokens an optional expiry.
ALTER TABLE schedules ADD COLUMN name TEXT;
CREATE UNIQUE INDEX schedules_name_key ON schedules (name);
ALTER TABLE api_tokens ADD COLUMN expires_at TIMESTAMPTZ;
