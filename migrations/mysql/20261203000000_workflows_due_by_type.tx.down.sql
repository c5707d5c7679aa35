ALTER TABLE workflows DROP INDEX workflows_due_idx,
    ADD INDEX workflows_due_idx (claim_group, priority DESC, next_activation, id);
