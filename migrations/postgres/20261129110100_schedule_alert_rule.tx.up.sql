-- A schedule's own alert rule: the workflows it starts alert through it besides the matching rules.
ALTER TABLE schedules ADD COLUMN alert_rule_id BIGINT NULL;
