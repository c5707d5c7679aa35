package persistence

import (
	"context"
	"fmt"

	"github.com/uptrace/bun"
)

// WorkflowTrace is the W3C traceparent a workflow was started under.
type WorkflowTrace struct {
	bun.BaseModel `bun:"table:workflow_traces,alias:wt"`

	WorkflowID  int64  `bun:"workflow_id,pk"`
	Traceparent string `bun:"traceparent,notnull"`
}

// WorkflowTraceInsertMany records the traceparents of new workflows.
func (s *Store) WorkflowTraceInsertMany(ctx context.Context, rows []*WorkflowTrace) error {
	if len(rows) == 0 {
		return nil
	}
	if _, err := s.idb.NewInsert().Model(&rows).Exec(ctx); err != nil {
		return fmt.Errorf("error inserting %d workflow traces: %w", len(rows), s.conflictOr(err))
	}
	return nil
}

// WorkflowTraceparents returns the traceparents of workflows started under one, by workflow.
func (s *Store) WorkflowTraceparents(ctx context.Context, workflowIDs []int64) (map[int64]string, error) {
	out := map[int64]string{}
	if len(workflowIDs) == 0 {
		return out, nil
	}
	var rows []*WorkflowTrace
	if err := s.idb.NewSelect().Model(&rows).Where("wt.workflow_id IN (?)", bunIn(workflowIDs)).Scan(ctx); err != nil {
		return nil, fmt.Errorf("error reading the traces of %d workflows: %w", len(workflowIDs), err)
	}
	for _, r := range rows {
		out[r.WorkflowID] = r.Traceparent
	}
	return out, nil
}

func init() { historyTables = append(historyTables, "workflow_traces") }
