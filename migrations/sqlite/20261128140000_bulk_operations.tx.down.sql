DROP TABLE bulk_operation_targets;
DROP TABLE bulk_operations;
