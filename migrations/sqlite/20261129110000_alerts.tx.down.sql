DROP TABLE alert_deliveries;
DROP TABLE alert_rules;
