-- The fingerprint of the request an idempotency key was first used with: the same key with another
-- request is refused instead of answered with the first one's result. '' for keys recorded before.
ALTER TABLE idempotency_keys ADD COLUMN request_hash VARCHAR(255) NOT NULL DEFAULT '';
