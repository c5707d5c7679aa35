package persistence

import (
	"context"
	"fmt"
	"slices"
)

// WaitSignalAmong is the wait_signal of a WAITING workflow that takes a signal of several names
// (or of any name): which ones is its state's, in its definition.
const WaitSignalAmong = "*"

// SignalPendingAmong returns a workflow's oldest unconsumed signal whose name is one of names (of
// any name when names is nil), nil when there is none.
func (s *Store) SignalPendingAmong(ctx context.Context, workflowID int64, names []string) (*Signal, error) {
	var sigs []*Signal
	q := s.idb.NewSelect().Model(&sigs).Where("workflow_id = ? AND consumed IS NULL", workflowID)
	if names != nil {
		if len(names) == 0 {
			return nil, nil
		}
		q = q.Where("name IN (?)", bunIn(names))
	}
	if err := q.OrderExpr("id").Limit(1).Scan(ctx); err != nil {
		return nil, fmt.Errorf("error loading pending signals of workflow %d: %w", workflowID, err)
	}
	if len(sigs) == 0 {
		return nil, nil
	}
	return sigs[0], nil
}

// SignalHasPending reports which of the workflows have an unconsumed signal of one of the names
// they wait for (wait maps workflow ID to names; nil names: any name), in one statement.
func (s *Store) SignalHasPending(ctx context.Context, wait map[int64][]string) (map[int64]bool, error) {
	out := map[int64]bool{}
	if len(wait) == 0 {
		return out, nil
	}
	ids := make([]int64, 0, len(wait))
	for id := range wait {
		ids = append(ids, id)
	}
	var rows []struct {
		WorkflowID int64  `bun:"workflow_id"`
		Name       string `bun:"name"`
	}
	if err := s.idb.NewSelect().Model((*Signal)(nil)).Column("workflow_id", "name").
		Where("workflow_id IN (?) AND consumed IS NULL", bunIn(ids)).Scan(ctx, &rows); err != nil {
		return nil, fmt.Errorf("error checking pending signals: %w", err)
	}
	for _, r := range rows {
		names := wait[r.WorkflowID]
		if names == nil {
			out[r.WorkflowID] = true
			continue
		}
		if slices.Contains(names, r.Name) {
			out[r.WorkflowID] = true
		}
	}
	return out, nil
}

// WorkflowWaitingAmong returns up to limit WAITING workflows after ID afterID that take a signal of
// several names (wait_signal WaitSignalAmong), oldest first, with their type, version and state only.
func (s *Store) WorkflowWaitingAmong(ctx context.Context, afterID, limit int64) ([]*Workflow, error) {
	var ws []*Workflow
	err := s.idb.NewSelect().Model(&ws).Column("id", "type", "definition_version", "state").
		Where(waitingFor+" AND wait_signal = ? AND id > ?", WaitSignalAmong, afterID).OrderExpr("id").Limit(limit).Scan(ctx)
	if err != nil {
		return nil, fmt.Errorf("error listing workflows waiting for several signals: %w", err)
	}
	return ws, nil
}
