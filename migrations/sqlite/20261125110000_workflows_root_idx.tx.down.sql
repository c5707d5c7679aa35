DROP INDEX workflows_root_idx;
