-- Times a client could set were once accepted past the year 9999. PostgreSQL stored them, but the
-- API now accepts only the years 0001 to 9999 (a cursor or an update naming such a time would be
-- refused). Each becomes the last instant cairn accepts; a fire time past it never comes.
UPDATE workflows SET next_activation = '9999-12-31 23:59:59.999999+00' WHERE next_activation > '9999-12-31 23:59:59.999999+00';
UPDATE schedules SET start_at = '9999-12-31 23:59:59.999999+00' WHERE start_at > '9999-12-31 23:59:59.999999+00';
UPDATE schedules SET end_at = '9999-12-31 23:59:59.999999+00' WHERE end_at > '9999-12-31 23:59:59.999999+00';
UPDATE schedules SET next_fire = NULL WHERE next_fire > '9999-12-31 23:59:59.999999+00';
