ALTER TABLE workflows DROP COLUMN steps;
