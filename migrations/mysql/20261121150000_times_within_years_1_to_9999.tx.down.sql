-- Nothing to undo.
SELECT 1;
