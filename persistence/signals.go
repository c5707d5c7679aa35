package persistence

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// SignalInsert stores a signal and sets its ID.
func (s *Store) SignalInsert(ctx context.Context, sig *Signal) error {
	if sig.Created.IsZero() {
		sig.Created = Now()
	}
	if _, err := s.idb.NewInsert().Model(sig).Returning("id").Exec(ctx); err != nil {
		return fmt.Errorf("error storing signal %q for workflow %d: %w", sig.Name, sig.WorkflowID, err)
	}
	return nil
}

// SignalPending returns the oldest unconsumed signals of workflows with a name, one per workflow
// (the first that arrived).
func (s *Store) SignalPending(ctx context.Context, workflowIDs []int64, name string) (map[int64]*Signal, error) {
	out := map[int64]*Signal{}
	if len(workflowIDs) == 0 {
		return out, nil
	}
	var sigs []*Signal
	if err := s.idb.NewSelect().Model(&sigs).
		Where("workflow_id IN (?) AND name = ? AND consumed IS NULL", bunIn(workflowIDs), name).
		OrderExpr("id").Scan(ctx); err != nil {
		return nil, fmt.Errorf("error loading pending signals: %w", err)
	}
	for _, sig := range sigs {
		if _, ok := out[sig.WorkflowID]; !ok {
			out[sig.WorkflowID] = sig
		}
	}
	return out, nil
}

// SignalConsumeMany marks signals consumed by actions (signal ID to action ID), in one statement.
func (s *Store) SignalConsumeMany(ctx context.Context, consumed map[int64]int64, at time.Time) error {
	if len(consumed) == 0 {
		return nil
	}
	ids := make([]int64, 0, len(consumed))
	var cases strings.Builder
	args := []any{UTC(at)}
	cases.WriteString("CASE id")
	for sigID, actionID := range consumed {
		ids = append(ids, sigID)
		cases.WriteString(" WHEN ? THEN ?")
		args = append(args, sigID, actionID)
	}
	cases.WriteString(" END")
	args = append(args, bunIn(ids))
	if _, err := s.idb.NewRaw("UPDATE signals SET consumed = ?, consumed_action_id = "+cases.String()+
		" WHERE id IN (?) AND consumed IS NULL", args...).Exec(ctx); err != nil {
		return fmt.Errorf("error consuming %d signals: %w", len(consumed), err)
	}
	return nil
}

// SignalList returns the signals of workflows in ID order.
func (s *Store) SignalList(ctx context.Context, workflowIDs []int64) ([]*Signal, error) {
	if len(workflowIDs) == 0 {
		return nil, nil
	}
	var out []*Signal
	if err := s.idb.NewSelect().Model(&out).Where("workflow_id IN (?)", bunIn(workflowIDs)).OrderExpr("id").Scan(ctx); err != nil {
		return nil, fmt.Errorf("error listing signals: %w", err)
	}
	return out, nil
}

// FormSubmissionInsert stores a form submission and sets its ID.
func (s *Store) FormSubmissionInsert(ctx context.Context, f *FormSubmission) error {
	if f.Created.IsZero() {
		f.Created = Now()
	}
	if _, err := s.idb.NewInsert().Model(f).Returning("id").Exec(ctx); err != nil {
		return fmt.Errorf("error storing form submission for workflow %d: %w", f.WorkflowID, err)
	}
	return nil
}

// FormSubmissionList returns the form submissions of workflows in ID order.
func (s *Store) FormSubmissionList(ctx context.Context, workflowIDs ...int64) ([]*FormSubmission, error) {
	if len(workflowIDs) == 0 {
		return nil, nil
	}
	var out []*FormSubmission
	if err := s.idb.NewSelect().Model(&out).Where("workflow_id IN (?)", bunIn(workflowIDs)).OrderExpr("id").Scan(ctx); err != nil {
		return nil, fmt.Errorf("error listing form submissions: %w", err)
	}
	return out, nil
}
