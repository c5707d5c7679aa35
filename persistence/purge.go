package persistence

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// WorkflowPurgeParams is the input of WorkflowPurge.
type WorkflowPurgeParams struct {
	// FinishedBefore: trees whose root ended before this time go.
	FinishedBefore time.Time
	// Limit caps how many trees one call removes.
	Limit int
}

// historyTables are the tables whose rows belong to a workflow, deleted with it. Change events are
// not among them: they are kept for a window of their own and trimmed by age (ChangeEventTrim),
// and a subscriber reading an event of a purged workflow gets the event without the workflow.
var historyTables = []string{"actions", "action_variables", "task_instances", "activity_logs", "side_effects",
	"signals", "form_submissions", "idempotency_keys"}

// HistoryTables returns the tables whose rows belong to a workflow and go when it is purged.
func HistoryTables() []string { return slices.Clone(historyTables) }

// WorkflowPurge deletes, in one transaction, up to Limit workflow trees (a root and all its
// descendants) whose root ended before a time and none of whose workflows is still running, with
// every row of their history. It returns how many workflows it deleted.
func (s *Store) WorkflowPurge(ctx context.Context, p WorkflowPurgeParams) (int, error) {
	if p.Limit <= 0 {
		p.Limit = 1000
	}
	var n int
	err := s.Tx(ctx, func(ctx context.Context, tx *Store) error {
		n = 0 // Tx may run this again
		var roots []int64
		q := tx.idb.NewSelect().Model((*Workflow)(nil)).Column("w.id").
			Where("w.parent_id IS NULL AND w.status IN (?) AND w.finished < ?", bunIn(terminalStatuses), UTC(p.FinishedBefore)).
			Where("NOT EXISTS (SELECT 1 FROM workflows AS c WHERE c.root_id = w.id AND c.status NOT IN (?))", bunIn(terminalStatuses)).
			OrderExpr("w.id").Limit(int64(p.Limit))
		q = tx.forUpdate(q, true)
		if err := q.Scan(ctx, &roots); err != nil {
			return err
		}
		if len(roots) == 0 {
			return nil
		}
		var tree []int64
		if err := tx.idb.NewSelect().Model((*Workflow)(nil)).Column("id").
			Where("id IN (?) OR root_id IN (?)", bunIn(roots), bunIn(roots)).Scan(ctx, &tree); err != nil {
			return err
		}
		tables, err := tx.purgedTables(ctx)
		if err != nil {
			return err
		}
		for _, table := range tables {
			if _, err := tx.idb.NewDelete().TableExpr(table).Where("workflow_id IN (?)", bunIn(tree)).Exec(ctx); err != nil {
				return fmt.Errorf("deleting from %s: %w", table, err)
			}
		}
		// Descendants first: a child points at its parent.
		if _, err := tx.idb.NewDelete().Model((*Workflow)(nil)).Where("root_id IN (?)", bunIn(roots)).Exec(ctx); err != nil {
			return err
		}
		res, err := tx.idb.NewDelete().Model((*Workflow)(nil)).Where("id IN (?)", bunIn(roots)).Exec(ctx)
		if err != nil {
			return err
		}
		gone, _ := res.RowsAffected()
		n = len(tree) - len(roots) + int(gone)
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("error purging ended workflows: %w", err)
	}
	return n, nil
}
