package persistence

import (
	"context"
	"fmt"
	"slices"
)

// WorkflowDescendantIDs returns the IDs of every descendant of a workflow (children, their
// children...), parents before their children, and whether any of them has not ended.
func (s *Store) WorkflowDescendantIDs(ctx context.Context, id int64) (ids []int64, active bool, err error) {
	parents := []int64{id}
	for len(parents) > 0 {
		var rows []struct {
			ID     int64  `bun:"id"`
			Status Status `bun:"status"`
		}
		if err := s.idb.NewSelect().Model((*Workflow)(nil)).Column("id", "status").
			Where("parent_id IN (?)", bunIn(parents)).OrderExpr("id").Scan(ctx, &rows); err != nil {
			return nil, false, fmt.Errorf("error listing the descendants of workflow %d: %w", id, err)
		}
		parents = parents[:0]
		for _, r := range rows {
			ids = append(ids, r.ID)
			parents = append(parents, r.ID)
			if !r.Status.Terminal() {
				active = true
			}
		}
	}
	return ids, active, nil
}

// WorkflowDelete deletes workflows with every row of their history (the tables of
// HistoryTables); ids lists parents before their children. Run it in a transaction.
func (s *Store) WorkflowDelete(ctx context.Context, ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	for _, table := range historyTables {
		if _, err := s.idb.NewDelete().TableExpr(table).Where("workflow_id IN (?)", bunIn(ids)).Exec(ctx); err != nil {
			return fmt.Errorf("error deleting from %s: %w", table, err)
		}
	}
	// Children first: a child points at its parent.
	for _, id := range slices.Backward(ids) {
		if _, err := s.idb.NewDelete().Model((*Workflow)(nil)).Where("id = ?", id).Exec(ctx); err != nil {
			return fmt.Errorf("error deleting workflow %d: %w", id, err)
		}
	}
	return nil
}
