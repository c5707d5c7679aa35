-- How many fire times of a schedule started no run: the previous run was still going (SKIP), or
-- the fire time had passed more than the catch-up window before a node got to it.
ALTER TABLE schedules ADD COLUMN skipped_fires BIGINT NOT NULL DEFAULT 0;
