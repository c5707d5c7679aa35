-- Nothing to move: DATETIME(6) refuses times past the year 9999, so cairn never stored any here.
-- Kept so that every dialect has the same migrations.
SELECT 1;
