-- Nothing to change: workflows_flow_due_idx, a partial index, reads a key's claimable workflows in
-- claim order. Kept so that every dialect has the same migrations.
SELECT 1;
