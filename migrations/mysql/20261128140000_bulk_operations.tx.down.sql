DROP TABLE bulk_operation_targets;
--bun:split
DROP TABLE bulk_operations;
