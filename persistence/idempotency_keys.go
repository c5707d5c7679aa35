package persistence

import (
	"context"
	"fmt"
)

// IdempotencyKeyGet returns what an operation recorded with a key: the workflow it acted on and
// the request's fingerprint (ErrNotFound: none yet).
func (s *Store) IdempotencyKeyGet(ctx context.Context, operation, key string) (*IdempotencyKey, error) {
	k := new(IdempotencyKey)
	if err := s.idb.NewSelect().Model(k).Where("ik.operation = ? AND ik.key = ?", operation, key).Scan(ctx); err != nil {
		return nil, noRows(err, "idempotency key", operation+"/"+key)
	}
	return k, nil
}

// IdempotencyKeyInsert records that an operation with a key acted on a workflow; ErrConflict when the
// key is taken (a concurrent request with the same key won).
func (s *Store) IdempotencyKeyInsert(ctx context.Context, k *IdempotencyKey) error {
	k.Created = Now()
	if _, err := s.idb.NewInsert().Model(k).Exec(ctx); err != nil {
		return fmt.Errorf("error recording idempotency key %s/%s: %w", k.Operation, k.Key, s.conflictOr(err))
	}
	return nil
}
