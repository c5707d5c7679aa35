-- MariaDB/MySQL had workflows_root_idx (root_id) from the start.
SELECT 1;
