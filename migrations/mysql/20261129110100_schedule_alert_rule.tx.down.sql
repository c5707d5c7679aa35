ALTER TABLE schedules DROP COLUMN alert_rule_id;
