-- Nothing to add: MariaDB and MySQL have no partial indexes, and a second index of every workflow
-- by type and status would cost every start and completion; a flow claim counts holders from
-- workflows_flow_idx instead.
-- Kept so that every dialect has the same migrations.
SELECT 1;
