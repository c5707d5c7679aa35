-- Nothing to change: InnoDB made an index for the foreign key idempotency_keys_workflow_fk
-- (workflow_id) when the table was created. Kept so that every dialect has the same migrations.
SELECT 1;
