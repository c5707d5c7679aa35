-- A key's claimable workflows in claim order, as workflows_flow_due_idx holds them where indexes
-- can be partial: claim_group is NULL for every workflow that cannot be claimed, so a probe by
-- type, key and group reads only those, in order. workflows_flow_idx (type, key, status) held
-- the key's every workflow, and a probe of a key with 20,000 queued read and sorted them all.
ALTER TABLE workflows ADD INDEX workflows_flow_heads_idx (type, concurrency_key, claim_group, priority DESC, next_activation, id);
