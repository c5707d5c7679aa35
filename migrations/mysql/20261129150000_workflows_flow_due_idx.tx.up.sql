-- Nothing to add: MariaDB and MySQL have no partial indexes, and an index of every workflow in
-- this order would cost every start and completion; a fair flow claim's read of one key's oldest
-- due workflow sorts that key's rows in workflows_flow_idx instead.
-- Kept so that every dialect has the same migrations.
SELECT 1;
