DROP TABLE alert_deliveries;
--bun:split
DROP TABLE alert_rules;
