package persistence

import (
	"context"
	"fmt"

	"github.com/uptrace/bun"
)

// bunIn expands a slice into the comma-separated list inside "IN (?)".
func bunIn(v any) any { return bun.List(v) }

// getByIDs loads the rows of T's table with the given IDs, in ID order: the shape of every Store
// method that turns a batch of IDs into rows (the dataloaders' path).
func getByIDs[T any](ctx context.Context, s *Store, ids []int64, what string) ([]*T, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	var out []*T
	if err := s.idb.NewSelect().Model(&out).Where("?TableAlias.id IN (?)", bunIn(ids)).OrderExpr("?TableAlias.id").Scan(ctx); err != nil {
		return nil, fmt.Errorf("error loading %d %s: %w", len(ids), what, err)
	}
	return out, nil
}
