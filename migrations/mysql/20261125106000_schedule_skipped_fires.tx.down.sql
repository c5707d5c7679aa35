ALTER TABLE schedules DROP COLUMN skipped_fires;
