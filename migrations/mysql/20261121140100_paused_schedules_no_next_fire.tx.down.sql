-- Nothing to undo: resuming a paused schedule computes its next fire.
SELECT 1;
