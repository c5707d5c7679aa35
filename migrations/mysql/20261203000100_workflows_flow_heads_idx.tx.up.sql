-- A key's claimable workflows in claim order, as workflows_flow_due_idx holds them where indexes
-- can be partial. flow_group is the group of a keyed workflow that may be claimed, NULL for every
-- other, and flow_next a keyed workflow's next activation: a probe by type, key and group reads
-- only the key's claimable workflows, in claim order, and the entries of workflows without a key
-- never change, so their claims and completions write nothing here. workflows_flow_idx (type, key,
-- status) held the key's every workflow, and a probe of a key with 20,000 queued read and sorted
-- them all.
ALTER TABLE workflows
    ADD COLUMN flow_group VARCHAR(255) AS (CASE WHEN concurrency_key IS NOT NULL AND status IN ('CREATED', 'IN_PROGRESS', 'WAITING')
        AND next_activation IS NOT NULL THEN executor_group END) STORED,
    ADD COLUMN flow_next DATETIME(6) AS (CASE WHEN concurrency_key IS NOT NULL THEN next_activation END) STORED,
    ADD INDEX workflows_flow_heads_idx (type, concurrency_key, flow_group, priority DESC, flow_next, id);
