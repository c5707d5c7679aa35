-- Nothing to change: MariaDB and MySQL have no partial indexes; workflows_flow_idx serves the key
-- walk, the head probes and the counts.
-- Kept so that every dialect has the same migrations.
SELECT 1;
