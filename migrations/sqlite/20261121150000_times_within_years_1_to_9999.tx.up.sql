-- Times a client could set were once accepted past the year 9999 (or before 0001). SQLite stored
-- them as text ('10000-...', '-0001-...') that sorts before today's times and never parses back,
-- which stopped every claim for good. Each becomes the last (or first) instant cairn accepts.
UPDATE workflows SET next_activation = CASE WHEN next_activation LIKE '-%' OR next_activation LIKE '0000-%'
    THEN '0001-01-01 00:00:00+00:00' ELSE '9999-12-31 23:59:59.999999+00:00' END
WHERE next_activation LIKE '-%' OR next_activation LIKE '0000-%' OR substr(next_activation, 5, 1) <> '-';

UPDATE schedules SET start_at = CASE WHEN start_at LIKE '-%' OR start_at LIKE '0000-%'
    THEN '0001-01-01 00:00:00+00:00' ELSE '9999-12-31 23:59:59.999999+00:00' END
WHERE start_at LIKE '-%' OR start_at LIKE '0000-%' OR substr(start_at, 5, 1) <> '-';

UPDATE schedules SET end_at = CASE WHEN end_at LIKE '-%' OR end_at LIKE '0000-%'
    THEN '0001-01-01 00:00:00+00:00' ELSE '9999-12-31 23:59:59.999999+00:00' END
WHERE end_at LIKE '-%' OR end_at LIKE '0000-%' OR substr(end_at, 5, 1) <> '-';

-- A fire time past the year 9999 never comes: no next fire.
UPDATE schedules SET next_fire = NULL
WHERE next_fire LIKE '-%' OR next_fire LIKE '0000-%' OR substr(next_fire, 5, 1) <> '-';
