-- The workflows that hold a slot of their concurrency key, as workflows_flow_holders_idx holds
-- them where indexes can be partial: flow_holder is the key of a keyed workflow in IN_PROGRESS,
-- EXECUTING or WAITING, NULL for every other. A flow claim counts a type's holders from their
-- entries alone; it read them from workflows_flow_idx (type, key, status), every workflow of the
-- type that has a key, so each claim read the whole of a key's queue (50,000 entries under one
-- key). The entries of workflows without a key stay NULL, so their claims and completions write
-- nothing here.
ALTER TABLE workflows
    ADD COLUMN flow_holder VARCHAR(255) AS (CASE WHEN concurrency_key IS NOT NULL AND status IN ('IN_PROGRESS', 'EXECUTING', 'WAITING')
        THEN concurrency_key END) STORED,
    ADD INDEX workflows_flow_holder_idx (type, flow_holder);
