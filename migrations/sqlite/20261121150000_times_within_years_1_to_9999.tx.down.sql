-- Nothing to undo: the times moved were ones cairn can no longer store.
SELECT 1;
