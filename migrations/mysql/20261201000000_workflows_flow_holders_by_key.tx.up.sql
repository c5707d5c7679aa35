-- Nothing to change: MariaDB and MySQL have no workflows_flow_holders_idx (see 20261130000000).
SELECT 1;
