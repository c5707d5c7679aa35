DROP INDEX workflows_top_level_idx;
