package persistence

import (
	"context"
	"fmt"
)

// waitingFor is the predicate of workflows_wait_signal_idx (wait_signal, id), word for word: SQLite
// uses a partial index only for a statement that names its predicate.
const waitingFor = "status = 'WAITING' AND wait_signal IS NOT NULL"

// WorkflowWaitingForSignal returns the IDs of up to limit WAITING workflows that wait for a
// signal of a name, oldest first.
func (s *Store) WorkflowWaitingForSignal(ctx context.Context, name string, limit int64) ([]int64, error) {
	var ids []int64
	err := s.idb.NewSelect().Model((*Workflow)(nil)).Column("id").
		Where(waitingFor+" AND wait_signal = ?", name).OrderExpr("id").Limit(limit).Scan(ctx, &ids)
	if err != nil {
		return nil, fmt.Errorf("error listing workflows waiting for signal %q: %w", name, err)
	}
	return ids, nil
}
