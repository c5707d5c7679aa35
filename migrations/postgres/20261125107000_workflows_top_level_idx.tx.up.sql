-- Workflows with no parent, newest first: the dashboard's default list (WorkflowFilter.topLevel)
-- and its counts, which would otherwise read past every fork branch and child to find them.
-- Children are served by workflows_parent_idx (parent_id IS NOT NULL).
CREATE INDEX workflows_top_level_idx ON workflows (id) WHERE parent_id IS NULL;
