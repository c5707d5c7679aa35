-- The descendants of a top-level workflow, counted for --max-tree-workflows (and the rootId filter):
-- children only, so a top-level workflow's insert pays nothing for it.
CREATE INDEX workflows_root_idx ON workflows (root_id) WHERE root_id IS NOT NULL;
