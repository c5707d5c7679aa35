package persistence

import (
	"context"
	"fmt"

	"github.com/uptrace/bun"
)

// WorkflowRerun links a workflow started by rerunWorkflow to the ended one it reruns.
type WorkflowRerun struct {
	bun.BaseModel `bun:"table:workflow_reruns,alias:wr"`

	WorkflowID int64 `bun:"workflow_id,pk"`
	RerunOf    int64 `bun:"rerun_of,notnull"`
}

// A rerun's link goes with the rerun when it is deleted or purged.
func init() { historyTables = append(historyTables, "workflow_reruns") }

// RerunInsert links a rerun to its original.
func (s *Store) RerunInsert(ctx context.Context, r *WorkflowRerun) error {
	if _, err := s.idb.NewInsert().Model(r).Exec(ctx); err != nil {
		return fmt.Errorf("error linking rerun %d: %w", r.WorkflowID, err)
	}
	return nil
}

// RerunLinks returns the links of workflows: those that are reruns (of: the workflow rerun) or,
// with originals, those whose originals they are.
func (s *Store) RerunLinks(ctx context.Context, ids []int64, originals bool) ([]*WorkflowRerun, error) {
	var out []*WorkflowRerun
	if len(ids) == 0 {
		return out, nil
	}
	col := "workflow_id"
	if originals {
		col = "rerun_of"
	}
	if err := s.idb.NewSelect().Model(&out).Where("? IN (?)", bun.Ident(col), bunIn(ids)).OrderExpr("workflow_id").Scan(ctx); err != nil {
		return nil, fmt.Errorf("error reading reruns: %w", err)
	}
	return out, nil
}
