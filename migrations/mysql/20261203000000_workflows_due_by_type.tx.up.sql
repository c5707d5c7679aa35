-- The due index is ordered by type after the claim group: a claim reads each of its types' due
-- workflows by a probe of its own and merges them in claim order, so it never reads through the
-- due workflows of a type it does not take (a flow-controlled type's held backlog).
ALTER TABLE workflows DROP INDEX workflows_due_idx,
    ADD INDEX workflows_due_idx (claim_group, type, priority DESC, next_activation, id);
