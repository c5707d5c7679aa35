-- Nothing to change: workflows_flow_holders_idx, a partial index, holds the holders alone. Kept
-- so that every dialect has the same migrations.
SELECT 1;
