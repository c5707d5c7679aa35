-- Nothing to add: workflows_parent_idx (parent_id, id) holds the NULLs here (MariaDB and MySQL have
-- no partial indexes), so it serves "parent_id IS NULL ORDER BY id" as well as the children.
-- Kept so that every dialect has the same migrations.
SELECT 1;
