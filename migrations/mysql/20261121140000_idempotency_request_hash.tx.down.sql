ALTER TABLE idempotency_keys DROP COLUMN request_hash;
